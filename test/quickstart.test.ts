import { describe, expect, it } from "vitest";
import { FinishReason } from "../gen/sluice/v1/delta_pb.js";
import { chatClient, collect, textOf, transports, userRequest } from "./helpers/clients.js";
import { startProcess } from "./helpers/processes.js";

describe("quick start: the gateway on its built-in default", () => {
  it("starts with no config and no keys, serves the demo aliases, and exits 0 on SIGTERM", async () => {
    const env = { PATH: process.env.PATH ?? "", PORT: "0" };
    const gw = await startProcess(["dist/src/main.js"], (l) => l.event === "server.listening", env);
    try {
      const url = gw.line.url as string;
      expect(gw.line.models).toEqual(["demo", "demo-embed", "demo-slow", "demo-tools"]);
      const client = chatClient(transports(url)["connect (connect-node, HTTP/1.1)"]!);
      const messages = await collect(client.streamChat(userRequest("demo", "Hello")));
      expect(textOf(messages).split(" ").filter(Boolean)).toHaveLength(40);
      expect(messages.at(-1)!.delta).toMatchObject({ case: "finish", value: { reason: FinishReason.STOP } });
      const tools = await collect(client.streamChat(userRequest("demo-tools", "Weather?")));
      expect(tools.some((m) => m.delta.case === "toolCall")).toBe(true);
      const embedded = await fetch(`${url}/v1/embeddings`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "demo-embed", input: ["Hello", "Hi"] }) });
      expect(embedded.status).toBe(200);
      expect(((await embedded.json()) as { data: unknown[] }).data).toHaveLength(2);
    } finally {
      expect(await gw.stop()).toBe(0);
    }
  });
});
