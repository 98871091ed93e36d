import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attemptDeltas, startAttempt } from "../src/attempt/attempt.js";
import { resolveConfig } from "../src/config/config.js";
import type { ChatRequest } from "../src/core/chat-request.js";
import type { ContentDelta } from "../src/core/delta.js";
import { GatewayError } from "../src/core/errors.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { simulatedText } from "../src/simulator/text.js";
import { createUpstreamClient, type UpstreamClient } from "../src/upstream/http-client.js";

/** One upstream exchange on its own: no server, no edge, no pipeline. */
let sim: Simulator;
let client: UpstreamClient;
beforeAll(async () => {
  sim = await startSimulator();
  client = createUpstreamClient();
});
afterAll(async () => {
  await client.close();
  await sim.close();
});

const targetOf = (model: string, timeouts = {}) => resolveConfig({ providers: { sim: { kind: "anthropic", baseUrl: sim.anthropicBaseUrl, timeouts } }, models: { m: { provider: "sim", model } } }, {}).models.get("m")!.targets[0]!;

const request = (text: string): ChatRequest => ({
  model: "m",
  messages: [{ role: "user", content: [{ type: "text", text }] }],
  tools: [],
  sampling: { stop: [] },
  metadata: { labels: {} },
});

const deps = () => ({ client, admit: async () => () => undefined });
const plan = (model: string, text = "hi", timeouts = {}) => ({ request: request(text), target: targetOf(model, timeouts), dropUnsupportedParams: false, requestId: "req_attempt", maxEventBytes: 1 << 20 });

async function drain(deltas: AsyncGenerator<ContentDelta>): Promise<ContentDelta[]> {
  const out: ContentDelta[] = [];
  for await (const d of deltas) out.push(d);
  return out;
}

describe("one attempt", () => {
  it("sends, decodes and translates a whole answer into content deltas", async () => {
    const attempt = startAttempt(plan("sim-1?tokens=4&seed=7"), deps(), new AbortController().signal);
    const deltas = await drain(attemptDeltas(attempt));
    expect(
      deltas
        .filter((d) => d.type === "text")
        .map((d) => (d as { text: string }).text)
        .join(""),
    ).toBe(simulatedText(7, 4));
    expect(deltas.at(-1)).toEqual({ type: "finish", reason: "stop" });
    expect(attempt.signal.aborted).toBe(false);
  });

  it("a failed status is a GatewayError naming the provider, and the attempt's signal carries it", async () => {
    const attempt = startAttempt(plan("sim-1?fail=status&status=503"), deps(), new AbortController().signal);
    await expect(drain(attemptDeltas(attempt))).rejects.toMatchObject({ code: "upstream_unavailable", provider: "sim" });
    expect((attempt.signal.reason as GatewayError).code).toBe("upstream_unavailable");
  });

  it("its phase timer ends it with the phase's error, and the upstream sees the close", async () => {
    const attempt = startAttempt(plan("sim-1?headers_ms=60000&tag=attempt-headers", "hi", { headersMs: 100 }), deps(), new AbortController().signal);
    await expect(drain(attemptDeltas(attempt))).rejects.toThrow(/^headers timeout: provider sim sent no response headers within 100 ms$/);
    const record = await sim.records.waitFor((r) => r.tag === "attempt-headers" && r.endedAt !== undefined, 30_000);
    expect(record.outcome).toBe("client_closed");
  });

  it("aborting its parent destroys the upstream request even while nobody pulls its deltas", async () => {
    const parent = new AbortController();
    const attempt = startAttempt(plan("sim-1?tokens=100000&token_chars=1000&tag=attempt-abort"), deps(), parent.signal);
    await attempt.first();
    await sim.records.waitFor((r) => r.tag === "attempt-abort" && r.waitingForDrain === true, 30_000);
    parent.abort(new GatewayError("canceled", "gone"));
    const record = await sim.records.waitFor((r) => r.tag === "attempt-abort" && r.endedAt !== undefined, 30_000);
    expect(record.outcome).toBe("client_closed");
    expect(attempt.signal.aborted).toBe(true);
  });

  it("releases its provider slot whichever way it ends", async () => {
    let held = 0;
    const counting = { client, admit: async () => (held++, () => void held--) };
    await drain(attemptDeltas(startAttempt(plan("sim-1?tokens=2"), counting, new AbortController().signal)));
    await drain(attemptDeltas(startAttempt(plan("sim-1?fail=status&status=500"), counting, new AbortController().signal))).catch(() => undefined);
    const parent = new AbortController();
    const stuck = startAttempt(plan("sim-1?fail=stall&fail_at=1"), counting, parent.signal);
    await stuck.first();
    parent.abort(new GatewayError("canceled", "gone"));
    expect(held).toBe(0);
  });
});
