import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolChoiceSchema } from "../gen/sluice/v1/chat_pb.js";
import { FinishReason } from "../gen/sluice/v1/delta_pb.js";
import { simulatedToolCalls } from "../src/simulator/script.js";
import { simulatedText } from "../src/simulator/text.js";
import { chatClient, collect, grpcJsStream, textOf, transports, unary, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    models: { plain: "sim-1?tokens=25&seed=42&chunking=random", tools: "sim-1?tokens=3&seed=7&tools=2" },
  });
});
afterAll(() => h.close());

/** The stream minus fields that differ per call (the gateway-assigned response id). */
function normalize(messages: Awaited<ReturnType<typeof collect>>) {
  return messages.map((m) => (m.delta.case === "start" ? { ...m, delta: { ...m.delta, value: { ...m.delta.value, responseId: "<id>" } } } : m));
}

describe("every client streams the same deltas", () => {
  it("connect-es transports and @grpc/grpc-js agree, and the text is the simulator's", async () => {
    const request = userRequest("plain", "Tell me something");
    const results: Record<string, Awaited<ReturnType<typeof collect>>> = {};
    for (const [name, transport] of Object.entries(transports(h.url))) {
      results[name] = await collect(chatClient(transport).streamChat(request));
    }
    const grpcJs = grpcJsStream(h.url, request);
    results["grpc (@grpc/grpc-js)"] = await grpcJs.messages;
    grpcJs.close();

    const reference = normalize(results["grpc (connect-node, h2)"]!);
    expect(textOf(reference)).toBe(simulatedText(42, 25));
    expect(reference[0]!.delta.case).toBe("start");
    expect(reference.at(-1)!.delta).toMatchObject({ case: "finish", value: { reason: FinishReason.STOP } });
    expect(reference.map((m) => m.sequence)).toEqual(reference.map((_, i) => BigInt(i)));
    for (const [name, messages] of Object.entries(results)) {
      expect(normalize(messages), name).toEqual(reference);
    }
    expect(Object.keys(results)).toHaveLength(6);
  });

  it("Chat returns the same answer aggregated", async () => {
    const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    const response = await client.chat(unary(userRequest("plain", "Tell me something")));
    expect(response.text).toBe(simulatedText(42, 25));
    expect(response.finishReason).toBe(FinishReason.STOP);
    expect(response.provider).toBe("simulator");
    expect(response.usage?.outputTokens).toBe(25n);
  });

  it("streams tool-call fragments that reassemble into the simulator's calls", async () => {
    const client = chatClient(transports(h.url)["connect (connect-node, HTTP/1.1)"]!);
    const request = userRequest("tools", "weather?", {
      tools: [{ $typeName: "sluice.v1.Tool", name: "lookup_weather", description: "", parameters: { type: "object" } }],
      toolChoice: create(ToolChoiceSchema, { choice: { case: "functionName", value: "lookup_weather" } }),
    });
    const messages = await collect(client.streamChat(request));
    const calls: Array<{ id: string; name: string; arguments: string }> = [];
    for (const m of messages) {
      if (m.delta.case !== "toolCall") continue;
      const d = m.delta.value;
      calls[d.index] ??= { id: "", name: "", arguments: "" };
      if (d.id) calls[d.index]!.id = d.id;
      if (d.name) calls[d.index]!.name = d.name;
      calls[d.index]!.arguments += d.arguments;
    }
    expect(calls).toEqual(simulatedToolCalls(7, 2, ["lookup_weather"]));
    expect(messages.filter((m) => m.delta.case === "toolCall").length).toBeGreaterThan(4);
    expect(messages.at(-1)!.delta).toMatchObject({ case: "finish", value: { reason: FinishReason.TOOL_CALLS } });

    const whole = await chatClient(transports(h.url)["grpc (connect-node, h2)"]!).chat(unary(request));
    expect(whole.toolCalls.map(({ id, name, arguments: a }) => ({ id, name, arguments: a }))).toEqual(calls);
  });

  it("reports usage before finish", async () => {
    const messages = await collect(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("plain", "a b c")));
    const kinds = messages.map((m) => m.delta.case);
    expect(kinds.slice(-2)).toEqual(["usage", "finish"]);
    const usage = messages.at(-2)!.delta.value as { inputTokens: bigint; outputTokens: bigint };
    expect(usage.inputTokens).toBe(3n);
    expect(usage.outputTokens).toBe(25n);
  });

  it("lists the configured aliases", async () => {
    const { models } = await chatClient(transports(h.url)["connect (connect-node, HTTP/1.1)"]!).listModels({});
    expect(models.map((m) => m.id)).toEqual(["plain", "tools"]);
    expect(models[0]!.provider).toBe("simulator");
  });

  it("passes a caller's x-request-id to the provider and returns it", async () => {
    const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    let header: string | null = null;
    await collect(
      client.streamChat(userRequest("plain", "#sim tag=rid tokens=2"), {
        headers: { "x-request-id": "trace-123" },
        onHeader: (headers) => (header = headers.get("x-request-id")),
      }),
    );
    expect(header).toBe("trace-123");
    const record = await h.sim.records.waitFor((r) => r.tag === "rid", 30_000);
    expect(record.requestId).toBe("trace-123");
  });
});

describe("health", () => {
  it("serves /healthz and /readyz on the same port", async () => {
    const live = await fetch(`${h.url}/healthz`);
    expect(live.status).toBe(200);
    const ready = await fetch(`${h.url}/readyz`);
    expect(await ready.json()).toEqual({ status: "ready" });
    expect((await fetch(`${h.url}/nope`)).status).toBe(404);
  });

  it("serves /debug/runtime only when debugEndpoints is on", async () => {
    expect((await fetch(`${h.url}/debug/runtime`)).status).toBe(404);
    const debug = await startHarness({ server: { debugEndpoints: true } });
    try {
      const stats = (await (await fetch(`${debug.url}/debug/runtime`)).json()) as Record<string, unknown>;
      expect(stats).toMatchObject({ activeStreams: 0 });
      expect(stats.rssBytes).toBeGreaterThan(0);
      expect(stats.eventLoopDelayMs).toHaveProperty("p99");
    } finally {
      await debug.close();
    }
  });
});
