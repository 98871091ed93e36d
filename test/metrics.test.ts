import { Code, ConnectError } from "@connectrpc/connect";
import { DataPointType, MetricReader } from "@opentelemetry/sdk-metrics";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatClient, transports, userRequest } from "./helpers/clients.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";
import { type Scrape, scrape } from "./helpers/prometheus.js";

/** Reads the SDK's own aggregation on demand: histogram series with their attributes, which the text parser flattens. */
class TestReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

/** Observations in a histogram's series whose attributes include `attributes`. */
async function histogramCount(reader: TestReader, name: string, attributes: Record<string, string>): Promise<number> {
  const { resourceMetrics } = await reader.collect();
  let count = 0;
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name || metric.dataPointType !== DataPointType.HISTOGRAM) continue;
      for (const point of metric.dataPoints) {
        if (Object.entries(attributes).every(([k, v]) => point.attributes[k] === v)) count += (point.value as { count: number }).count;
      }
    }
  }
  return count;
}

const reader = new TestReader();
let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    metricReader: reader,
    routing: (sim) => ({
      providers: {
        primary: { kind: "openai", baseUrl: baseUrlFor(sim, "openai"), breaker: { failures: 10_000 } },
        backup: { kind: "anthropic", baseUrl: baseUrlFor(sim, "anthropic"), breaker: { failures: 10_000 } },
      },
      models: {
        sim: { provider: "primary", model: "sim-1?tokens=3" },
        flaky: { provider: "primary", model: "sim-1?tokens=2&fail=status&status=503&fail_first=1&script=metrics-flaky", retry: { maxAttempts: 2, baseBackoffMs: 1 } },
        failover: {
          targets: [
            { provider: "primary", model: "sim-1?fail=status&status=500&script=metrics-fo" },
            { provider: "backup", model: "sim-1?tokens=2" },
          ],
        },
      },
    }),
  });
});
afterAll(() => h.close());

const client = () => chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
const metrics = () => scrape(`${h.url}/metrics`);
const ended = (requestId: string) => h.waitForLog((l) => l.event === "access" && l.requestId === requestId);

/**
 * `deadlineMs` is sent as `grpc-timeout` without a timer of the client's
 * own: the gateway's deadline is then the only one, and the outcome it
 * counts is its own, not a race between two timers (a client that gives
 * up first is counted `canceled`, and on a busy machine it sometimes did).
 */
async function run(model: string, text: string, requestId: string, options: { deadlineMs?: number; cancelAfter?: number } = {}): Promise<ConnectError | undefined> {
  const abort = new AbortController();
  let seen = 0;
  const headers: Record<string, string> = { "x-request-id": requestId, ...(options.deadlineMs ? { "grpc-timeout": `${options.deadlineMs}m` } : {}) };
  try {
    for await (const m of client().streamChat(userRequest(model, text), { headers, signal: abort.signal })) {
      if (m.delta.case === "text" && ++seen === options.cancelAfter) abort.abort();
    }
    return undefined;
  } catch (e) {
    return ConnectError.from(e);
  } finally {
    await ended(requestId);
  }
}

describe("/metrics in Prometheus text format, parsed", () => {
  let before: Scrape;
  beforeAll(async () => {
    before = await metrics();
  });
  const delta = async (name: string, labels: Record<string, string>) => (await metrics()).value(name, labels) - before.value(name, labels);

  it("a completed stream: streams, tokens by type, TTFT and duration with the GenAI conventions' buckets", async () => {
    expect(await run("sim", "one two", "m-ok")).toBeUndefined();
    const after = await metrics();
    const labels = { gen_ai_request_model: "sim", sluice_outcome: "ok" };
    expect(after.value("sluice_streams_total", labels) - before.value("sluice_streams_total", labels)).toBe(1);
    expect(after.value("sluice_tokens_total", { ...labels, gen_ai_token_type: "output" }) - before.value("sluice_tokens_total", { ...labels, gen_ai_token_type: "output" })).toBe(3);
    expect(after.value("sluice_tokens_total", { ...labels, gen_ai_token_type: "input" }) - before.value("sluice_tokens_total", { ...labels, gen_ai_token_type: "input" })).toBe(2);
    expect(await histogramCount(reader, "gen_ai.server.time_to_first_token", { "gen_ai.request.model": "sim", "sluice.outcome": "ok" })).toBe(1);
    expect(await histogramCount(reader, "gen_ai.server.request.duration", { "gen_ai.request.model": "sim", "sluice.outcome": "ok" })).toBe(1);
    expect(after.buckets("gen_ai_server_time_to_first_token")).toEqual([0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]);
    expect(after.buckets("gen_ai_server_request_duration")).toEqual([0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]);
    expect(after.buckets("gen_ai_server_time_per_output_token")).toEqual([0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5]);
    const family = after.families.find((f) => f.name === "sluice_streams_total")!;
    expect(family.type).toBe("COUNTER");
    expect(family.metrics.find((s) => s.labels?.sluice_outcome === "ok")?.labels).toMatchObject({ gen_ai_provider_name: "openai", sluice_provider: "primary", gen_ai_response_model: "sim-1?tokens=3" });
  });

  it("a cancel counts as a client abort", async () => {
    const error = await run("sim", "#sim tokens=1000 delay_ms=5", "m-cancel", { cancelAfter: 2 });
    expect(error?.code).toBe(Code.Canceled);
    expect(await delta("sluice_client_aborts_total", { gen_ai_request_model: "sim", sluice_outcome: "canceled" })).toBe(1);
    expect(await delta("sluice_streams_total", { gen_ai_request_model: "sim", sluice_outcome: "canceled" })).toBe(1);
  });

  it("a deadline is its own outcome", async () => {
    const error = await run("sim", "#sim fail=stall fail_at=1", "m-deadline", { deadlineMs: 1500 });
    expect(error?.code).toBe(Code.DeadlineExceeded);
    expect(await delta("sluice_streams_total", { gen_ai_request_model: "sim", sluice_outcome: "deadline_exceeded" })).toBe(1);
  });

  it("a retry and a failover are counted, with every attempt's outcome", async () => {
    expect(await run("flaky", "hi", "m-retry")).toBeUndefined();
    expect(await delta("sluice_retries_total", { gen_ai_request_model: "flaky" })).toBe(1);
    expect(await delta("sluice_upstream_attempts_total", { gen_ai_request_model: "flaky", sluice_attempt_outcome: "failed", error_type: "upstream_unavailable" })).toBe(1);
    expect(await run("failover", "hi", "m-failover")).toBeUndefined();
    expect(await delta("sluice_failovers_total", { gen_ai_request_model: "failover", sluice_provider: "backup" })).toBe(1);
    expect(await delta("sluice_upstream_attempts_total", { gen_ai_request_model: "failover", sluice_attempt_outcome: "committed", gen_ai_provider_name: "anthropic" })).toBe(1);
  });

  it("unknown aliases all count under one label value, whatever the client sends", async () => {
    for (let i = 0; i < 20; i++) await run(`no-such-model-${i}`, "hi", `m-unknown-${i}`);
    const after = await metrics();
    expect(after.value("sluice_streams_total", { gen_ai_request_model: "unknown", sluice_outcome: "unknown_model" }) - before.value("sluice_streams_total", { gen_ai_request_model: "unknown", sluice_outcome: "unknown_model" })).toBe(20);
    expect([...after.labelValues("sluice_streams_total", "gen_ai_request_model")].sort()).toEqual(["failover", "flaky", "sim", "unknown"]);
  });

  it("gauges: streams in flight, queues, breakers, upstream connections, event loop, memory", async () => {
    const after = await metrics();
    for (const name of ["sluice_streams_active", "sluice_queue_depth", "sluice_breaker_state", "sluice_upstream_connections", "nodejs_eventloop_delay", "v8js_memory_heap_used", "process_memory_usage"]) {
      expect(after.families.find((f) => f.name === name)?.type, name).toBe("GAUGE");
    }
    expect(after.labelValues("sluice_breaker_state", "sluice_target")).toContain("primary/sim-1?tokens=3");
  });
});

describe("metrics on a listener of their own", () => {
  let own: Harness;
  beforeAll(async () => {
    own = await startHarness({ models: { sim: "sim-1?tokens=2" }, telemetry: { metrics: { port: 0 } } });
  });
  afterAll(() => own.close());

  it("are not on the public port, and are on theirs", async () => {
    expect((await fetch(`${own.url}/metrics`)).status).toBe(404);
    expect((await scrape(own.sluice.metricsUrl!)).families.some((f) => f.name === "sluice_streams_active")).toBe(true);
  });
});
