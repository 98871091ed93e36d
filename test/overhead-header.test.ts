import { DataPointType, MetricReader } from "@opentelemetry/sdk-metrics";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatClient, collect, transports, unary, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { scrape } from "./helpers/prometheus.js";

const KEY = "sk-test-overhead-7d1e4b2a9c3f5680";
/** The simulator waits this long before the first event of the `slow` alias: time that must not count as the gateway's. */
const UPSTREAM_FIRST_EVENT_MS = 600;
const HEADER = "sluice-overhead-ms";

/** Reads the SDK's own aggregation: histogram series keep their attributes there (the text parser flattens them). */
class TestReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}
const reader = new TestReader();

/** Observations of sluice.overhead for one edge. */
async function histogramCount(edge: string): Promise<number> {
  const { resourceMetrics } = await reader.collect();
  let count = 0;
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== "sluice.overhead" || metric.dataPointType !== DataPointType.HISTOGRAM) continue;
      for (const point of metric.dataPoints) if (point.attributes["sluice.edge"] === edge) count += (point.value as { count: number }).count;
    }
  }
  return count;
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    metricReader: reader,
    models: { sim: "sim-1?tokens=3", slow: `sim-1?tokens=3&ttft_ms=${UPSTREAM_FIRST_EVENT_MS}`, embed: "sim-embed" },
    env: { OVERHEAD_KEY: KEY },
    auth: { keys: [{ name: "overhead", keyEnv: "OVERHEAD_KEY" }] },
  });
});
afterAll(() => h.close());

const auth = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
const chat = (model: string, stream: boolean) => ({ model, stream, messages: [{ role: "user", content: "hi" }] });

/** POSTs JSON, reads the whole body, and gives the header and the status. */
async function post(path: string, body: unknown, headers: Record<string, string> = auth): Promise<{ status: number; overhead: string | null; body: string }> {
  const res = await fetch(`${h.url}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
  return { status: res.status, overhead: res.headers.get(HEADER), body: await res.text() };
}

function expectMs(value: string | null | undefined): number {
  expect(value).toMatch(/^\d+\.\d{3}$/);
  return Number(value);
}

describe("sluice-overhead-ms on every edge", () => {
  const answers: Array<[string, string, unknown]> = [
    ["Chat Completions, streamed", "/v1/chat/completions", chat("sim", true)],
    ["Chat Completions, whole", "/v1/chat/completions", chat("sim", false)],
    ["Messages, streamed", "/v1/messages", { model: "sim", max_tokens: 50, stream: true, messages: [{ role: "user", content: "hi" }] }],
    ["Messages, whole", "/v1/messages", { model: "sim", max_tokens: 50, messages: [{ role: "user", content: "hi" }] }],
    ["Responses, streamed", "/v1/responses", { model: "sim", input: "hi", stream: true, store: false }],
    ["Responses, whole", "/v1/responses", { model: "sim", input: "hi", store: false }],
    ["embeddings", "/v1/embeddings", { model: "embed", input: "one two" }],
    ["Gemini, streamed", "/v1beta/models/sim:streamGenerateContent?alt=sse", { contents: [{ role: "user", parts: [{ text: "hi" }] }] }],
    ["Gemini, whole", "/v1beta/models/sim:generateContent", { contents: [{ role: "user", parts: [{ text: "hi" }] }] }],
  ];
  it.each(answers)("%s: a number of milliseconds with the answer", async (_name, path, body) => {
    const res = await post(path, body);
    expect(res.status).toBe(200);
    expectMs(res.overhead);
  });

  it("gRPC StreamChat and Chat: response header metadata of the same name", async () => {
    const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    const headers = { authorization: `Bearer ${KEY}` };
    let streamed: string | null = null;
    const messages = await collect(client.streamChat(userRequest("sim", "hi"), { headers, onHeader: (m) => (streamed = m.get(HEADER)) }));
    expect(messages.length).toBeGreaterThan(0);
    expectMs(streamed);
    let whole: string | null = null;
    await client.chat(unary(userRequest("sim", "hi")), { headers, onHeader: (m) => (whole = m.get(HEADER)) });
    expectMs(whole);
  });

  it("a refused request keeps its refusal and says its overhead: unknown key (401), bad body (400), unknown alias (404)", async () => {
    const unknownKey = await post("/v1/chat/completions", chat("sim", true), { authorization: "Bearer sk-nobody", "content-type": "application/json" });
    expect(unknownKey.status).toBe(401);
    expect(JSON.parse(unknownKey.body)).toMatchObject({ error: { code: "invalid_api_key" } });
    expectMs(unknownKey.overhead);
    const badBody = await post("/v1/chat/completions", { model: "sim", messages: "not a list" });
    expect(badBody.status).toBe(400);
    expectMs(badBody.overhead);
    const unknownAlias = await post("/v1/messages", { model: "nope", max_tokens: 5, messages: [{ role: "user", content: "hi" }] });
    expect(unknownAlias.status).toBeGreaterThanOrEqual(400);
    expectMs(unknownAlias.overhead);
  });

  it("leaves out the upstream's wait: overhead + the upstream's delay before its first event fits in what the client waited", async () => {
    for (const stream of [true, false]) {
      const started = performance.now();
      const res = await fetch(`${h.url}/v1/chat/completions`, { method: "POST", headers: auth, body: JSON.stringify(chat("slow", stream)) });
      // The client saw the headers after the gateway committed them, which was after the upstream's first event.
      const waited = performance.now() - started;
      const overhead = expectMs(res.headers.get(HEADER));
      await res.text();
      expect(overhead + UPSTREAM_FIRST_EVENT_MS).toBeLessThanOrEqual(waited);
    }
  });

  it("counts each call once in the sluice_overhead histogram by edge, with sub-millisecond buckets", async () => {
    const calls: Array<[string, () => Promise<unknown>]> = [
      ["openai-sse", () => post("/v1/chat/completions", chat("sim", true))],
      ["openai-json", () => post("/v1/chat/completions", chat("sim", false))],
      ["openai-embeddings", () => post("/v1/embeddings", { model: "embed", input: "x" })],
      ["grpc", () => collect(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("sim", "hi"), { headers: { authorization: `Bearer ${KEY}` } }))],
    ];
    for (const [edge, call] of calls) {
      const before = await histogramCount(edge);
      await call();
      expect(await histogramCount(edge)).toBe(before + 1);
    }
    const metrics = await scrape(`${h.url}/metrics`);
    expect(metrics.buckets("sluice_overhead")).toEqual(expect.arrayContaining([0.0001, 0.001, 0.01]));
  });
});
