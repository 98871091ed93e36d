import { PassThrough } from "node:stream";
import { type ExportResult, ExportResultCode } from "@opentelemetry/core";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { resolveConfig } from "../src/config/config.js";
import { createLogger } from "../src/logging/logger.js";
import { BATCH_SPAN_DEFAULTS, batchSpanSettingsFromEnv, MAX_BATCH_SPAN_VALUE } from "../src/telemetry/batch-span-env.js";
import { createTracing, type Tracing } from "../src/telemetry/tracing.js";

describe("OTEL_BSP_* parsing", () => {
  it("unset or empty: the specification's defaults, no problem", () => {
    expect(batchSpanSettingsFromEnv({})).toEqual({ settings: BATCH_SPAN_DEFAULTS, problems: [] });
    expect(batchSpanSettingsFromEnv({ OTEL_BSP_SCHEDULE_DELAY: "", OTEL_BSP_MAX_QUEUE_SIZE: "" })).toEqual({ settings: BATCH_SPAN_DEFAULTS, problems: [] });
  });

  it("each variable sets its own setting", () => {
    const { settings, problems } = batchSpanSettingsFromEnv({
      OTEL_BSP_SCHEDULE_DELAY: "250",
      OTEL_BSP_MAX_QUEUE_SIZE: "100",
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "10",
      OTEL_BSP_EXPORT_TIMEOUT: "2000",
    });
    expect(problems).toEqual([]);
    expect(settings).toEqual({ scheduledDelayMillis: 250, maxQueueSize: 100, maxExportBatchSize: 10, exportTimeoutMillis: 2000 });
  });

  it("the largest value a Node timer keeps is taken; one more is not", () => {
    expect(batchSpanSettingsFromEnv({ OTEL_BSP_SCHEDULE_DELAY: String(MAX_BATCH_SPAN_VALUE) }).settings.scheduledDelayMillis).toBe(2_147_483_647);
    expect(batchSpanSettingsFromEnv({ OTEL_BSP_SCHEDULE_DELAY: "2147483648" }).settings.scheduledDelayMillis).toBe(5_000);
  });

  const invalid = ["0", "-1", "1.5", "1e3", "0x10", " 100", "100 ", "+100", "010", "abc", "Infinity", "NaN", "99999999999999999999"];
  it.each(invalid)("%j is not a positive integer: the default is kept and the problem named", (value) => {
    const { settings, problems } = batchSpanSettingsFromEnv({ OTEL_BSP_EXPORT_TIMEOUT: value, OTEL_BSP_MAX_QUEUE_SIZE: value });
    expect(settings).toEqual(BATCH_SPAN_DEFAULTS);
    expect(problems).toEqual([
      { variable: "OTEL_BSP_MAX_QUEUE_SIZE", value, reason: "not a positive integer up to 2147483647", used: 2048 },
      { variable: "OTEL_BSP_EXPORT_TIMEOUT", value, reason: "not a positive integer up to 2147483647", used: 30000 },
    ]);
  });

  it("a long value is cut in the problem", () => {
    const [problem] = batchSpanSettingsFromEnv({ OTEL_BSP_SCHEDULE_DELAY: "x".repeat(500) }).problems;
    expect(problem!.value).toBe(`${"x".repeat(40)}…`);
  });

  it("a batch larger than the queue is cut to the queue, and said so", () => {
    const { settings, problems } = batchSpanSettingsFromEnv({ OTEL_BSP_MAX_QUEUE_SIZE: "100" });
    expect(settings.maxExportBatchSize).toBe(100);
    expect(problems).toEqual([{ variable: "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", value: "512", reason: "larger than the queue (OTEL_BSP_MAX_QUEUE_SIZE=100)", used: 100 }]);
  });
});

/** Records each export's size; holds its answer while `hold` is on, so a test decides when an export ends. */
function recordingExporter() {
  const batches: number[] = [];
  const held: Array<(result: ExportResult) => void> = [];
  let hold = false;
  const exporter: SpanExporter = {
    export(spans: ReadableSpan[], done: (result: ExportResult) => void) {
      batches.push(spans.length);
      if (hold) held.push(done);
      else done({ code: ExportResultCode.SUCCESS });
    },
    shutdown: async () => undefined,
  };
  return {
    exporter,
    batches,
    holdAnswers: () => (hold = true),
    release() {
      hold = false;
      for (const done of held.splice(0)) done({ code: ExportResultCode.SUCCESS });
    },
  };
}

const config = resolveConfig({ providers: { p: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } }, models: { m: { provider: "p", model: "m" } } }, {}).telemetry;

/** The gateway's tracing with `env`, exporting to a recording exporter; the log lines it wrote. */
function tracingWith(env: NodeJS.ProcessEnv) {
  const recorder = recordingExporter();
  let text = "";
  const sink = new PassThrough();
  sink.on("data", (d: Buffer) => (text += d.toString()));
  const tracing: Tracing = createTracing({ config, env, logger: createLogger("info", sink), exporter: recorder.exporter });
  const spans = (n: number) => {
    for (let i = 0; i < n; i++) tracing.tracer.startSpan(`span ${i}`).end();
  };
  const logs = () =>
    text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { tracing, spans, logs, ...recorder };
}

describe("the tracer's batch processor takes the OTEL_BSP_* variables", () => {
  // The processor's timers are the global ones: faked, they fire only when the test moves the clock.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  const NEVER = "600000";

  it("OTEL_BSP_SCHEDULE_DELAY: a lone span is exported once that delay has passed, not the default 5 s", async () => {
    const t = tracingWith({ OTEL_BSP_SCHEDULE_DELAY: "10" });
    t.spans(1);
    await vi.advanceTimersByTimeAsync(9);
    expect(t.batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(t.batches).toEqual([1]);
    await t.tracing.shutdown();
  });

  it("OTEL_BSP_MAX_EXPORT_BATCH_SIZE: a full batch is exported at once, without waiting for the delay", async () => {
    const t = tracingWith({ OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "2", OTEL_BSP_SCHEDULE_DELAY: NEVER });
    t.spans(3);
    await vi.advanceTimersByTimeAsync(0);
    expect(t.batches).toEqual([2]);
    await t.tracing.flush();
    expect(t.batches).toEqual([2, 1]);
    await t.tracing.shutdown();
  });

  it("OTEL_BSP_MAX_QUEUE_SIZE: spans past a full queue are dropped", async () => {
    const t = tracingWith({ OTEL_BSP_MAX_QUEUE_SIZE: "2", OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "2", OTEL_BSP_SCHEDULE_DELAY: NEVER });
    t.holdAnswers();
    t.spans(2); // a full batch: its export starts and is held
    t.spans(3); // the queue takes two, the third is dropped
    t.release();
    await t.tracing.flush();
    expect(t.batches).toEqual([2, 2]);
    await t.tracing.shutdown();
  });

  it("OTEL_BSP_EXPORT_TIMEOUT: an export that does not answer is given up after that long, and the next batch goes", async () => {
    const t = tracingWith({ OTEL_BSP_EXPORT_TIMEOUT: "50", OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "1", OTEL_BSP_SCHEDULE_DELAY: NEVER });
    t.holdAnswers();
    t.spans(2); // the first is exported (and held), the second waits for it
    await vi.advanceTimersByTimeAsync(49);
    expect(t.batches).toEqual([1]);
    await vi.advanceTimersByTimeAsync(1);
    expect(t.batches).toEqual([1, 1]);
    t.release();
    await t.tracing.shutdown();
  });

  it("a value not taken is logged as a warning naming the variable and the value used instead", async () => {
    const t = tracingWith({ OTEL_BSP_SCHEDULE_DELAY: "5s" });
    expect(t.logs()).toContainEqual(expect.objectContaining({ level: 40, event: "tracing.env_ignored", variable: "OTEL_BSP_SCHEDULE_DELAY", value: "5s", used: 5000 }));
    await t.tracing.shutdown();
  });
});
