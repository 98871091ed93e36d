import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import OpenAI from "openai";
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
      expect(gw.line.models).toEqual(["demo", "demo-embed", "demo-slow", "demo-thinking", "demo-tools"]);
      // The README's quick start names every alias the default serves.
      const readme = readFileSync("README.md", "utf8");
      const quickStart = readme.slice(readme.indexOf("## Quick start"), readme.indexOf("\n## ", readme.indexOf("## Quick start") + 1));
      for (const alias of gw.line.models as string[]) expect(quickStart).toContain(`\`${alias}\``);
      expect(quickStart).toContain(`serves ${["one", "two", "three", "four", "five"][(gw.line.models as string[]).length - 1]} aliases`);
      const client = chatClient(transports(url)["connect (connect-node, HTTP/1.1)"]!);
      const messages = await collect(client.streamChat(userRequest("demo", "Hello")));
      expect(textOf(messages).split(" ").filter(Boolean)).toHaveLength(40);
      expect(messages.at(-1)!.delta).toMatchObject({ case: "finish", value: { reason: FinishReason.STOP } });
      const tools = await collect(client.streamChat(userRequest("demo-tools", "Weather?")));
      expect(tools.some((m) => m.delta.case === "toolCall")).toBe(true);
      // demo-tools behaves as a model in an agent loop: it calls the declared tool, then answers with its result, and the loop ends.
      const runner = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 }).chat.completions.runTools(
        {
          model: "demo-tools",
          messages: [{ role: "user", content: "Weather in Oslo?" }],
          tools: [
            {
              type: "function",
              function: {
                name: "get_weather",
                description: "Weather for a city",
                parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
                parse: JSON.parse,
                function: (a: { city: string }) => `sunny in ${a.city}`,
              },
            },
          ],
        },
        { maxChatCompletions: 4 },
      );
      expect(await runner.finalContent()).toMatch(/^get_weather returned: sunny in \S+/);
      expect(runner.messages.filter((m) => m.role === "tool")).toHaveLength(2);
      // demo-thinking answers over the Anthropic wire with signed thinking, on the Messages edge.
      const thought = await fetch(`${url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "demo-thinking", max_tokens: 2048, messages: [{ role: "user", content: "Hello" }] }),
      });
      const message = (await thought.json()) as { content: Array<{ type: string; signature?: string }> };
      expect(message.content.map((b) => b.type)).toEqual(["thinking", "text"]);
      expect(message.content[0]!.signature).toMatch(/\S/);
      const embedded = await fetch(`${url}/v1/embeddings`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "demo-embed", input: ["Hello", "Hi"] }) });
      expect(embedded.status).toBe(200);
      expect(((await embedded.json()) as { data: unknown[] }).data).toHaveLength(2);
    } finally {
      expect(await gw.stop()).toBe(0);
    }
  });

  it("the start banner names the pid and the console, and its commands work as printed", async () => {
    const env = { PATH: process.env.PATH ?? "", PORT: "0", HOME: process.env.HOME ?? "" };
    const gw = await startProcess(["dist/src/main.js"], (l) => l.event === "server.listening", env);
    try {
      const url = gw.line.url as string;
      const banner = gw.stderr();
      expect(banner).toContain(`Sluice is listening on ${url} (pid ${String(gw.child.pid)})`);
      expect(gw.line.pid).toBe(gw.child.pid);
      const consoleUrl = /^Console: (\S+)$/m.exec(banner)?.[1];
      expect(consoleUrl).toBe(`${url}/console/`);
      expect((await fetch(consoleUrl!)).status).toBe(200);
      const commands = banner.split("\n").filter((line) => line.startsWith("  "));
      expect(commands.map((c) => c.trim().split(" ").slice(0, 3).join(" "))).toEqual(["curl --no-buffer " + url + "/v1/chat/completions", "npx @bufbuild/buf curl", "npx @bufbuild/buf curl"]);
      const outputs = await Promise.all(commands.map((command) => promisify(execFile)("sh", ["-c", command], { env: process.env }).then((r) => r.stdout)));
      expect(outputs[0]).toContain("data: [DONE]");
      expect(outputs[1]).toContain('"finish"');
      expect(outputs[2]).toContain("sluice.v1.ChatService/StreamChat");
    } finally {
      expect(await gw.stop()).toBe(0);
    }
  });
});
