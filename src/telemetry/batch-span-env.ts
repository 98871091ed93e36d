import type { BatchSpanProcessorOptions } from "@opentelemetry/sdk-trace";

/** The batch span processor's four settings, as the SDK's options name them. */
export type BatchSpanSettings = Required<Pick<BatchSpanProcessorOptions, "scheduledDelayMillis" | "maxQueueSize" | "maxExportBatchSize" | "exportTimeoutMillis">>;

/** The specification's defaults, which are also the SDK's. */
export const BATCH_SPAN_DEFAULTS: BatchSpanSettings = {
  scheduledDelayMillis: 5_000,
  maxQueueSize: 2_048,
  maxExportBatchSize: 512,
  exportTimeoutMillis: 30_000,
};

/** Which variable sets which setting. */
const VARIABLES = {
  scheduledDelayMillis: "OTEL_BSP_SCHEDULE_DELAY",
  maxQueueSize: "OTEL_BSP_MAX_QUEUE_SIZE",
  maxExportBatchSize: "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
  exportTimeoutMillis: "OTEL_BSP_EXPORT_TIMEOUT",
} as const satisfies Record<keyof BatchSpanSettings, string>;

/**
 * The largest value taken. Node turns a longer setTimeout delay into 1 ms,
 * so a delay past it would export at once instead of rarely; the sizes share
 * the bound (an int32, as the Java and Go SDKs read these variables).
 */
export const MAX_BATCH_SPAN_VALUE = 2_147_483_647;

/** A variable that was set but not taken, and the value used instead. */
export interface BatchSpanProblem {
  readonly variable: string;
  /** As given, cut short: these are tuning numbers, not secrets. */
  readonly value: string;
  readonly reason: string;
  readonly used: number;
}

export interface BatchSpanEnv {
  readonly settings: BatchSpanSettings;
  readonly problems: readonly BatchSpanProblem[];
}

const POSITIVE_INTEGER = /^[1-9][0-9]*$/;

function shown(value: string): string {
  return value.length > 40 ? `${value.slice(0, 40)}…` : value;
}

/**
 * The OTEL_BSP_* variables, which the trace SDK package no longer reads
 * itself: without them spans wait up to 5 s in the batch before export.
 * Each must be a positive decimal integer (milliseconds or spans). A value
 * that is not is ignored with a problem to log, as the specification asks
 * of every SDK: a tracing tuning knob set fleet-wide should not keep a
 * gateway from starting. An empty variable counts as unset.
 */
export function batchSpanSettingsFromEnv(env: NodeJS.ProcessEnv): BatchSpanEnv {
  const problems: BatchSpanProblem[] = [];
  const read = (key: keyof BatchSpanSettings): number => {
    const variable = VARIABLES[key];
    const raw = env[variable];
    const fallback = BATCH_SPAN_DEFAULTS[key];
    if (raw === undefined || raw === "") return fallback;
    const value = Number(raw);
    if (POSITIVE_INTEGER.test(raw) && value <= MAX_BATCH_SPAN_VALUE) return value;
    problems.push({ variable, value: shown(raw), reason: `not a positive integer up to ${MAX_BATCH_SPAN_VALUE}`, used: fallback });
    return fallback;
  };
  const settings = {
    scheduledDelayMillis: read("scheduledDelayMillis"),
    maxQueueSize: read("maxQueueSize"),
    maxExportBatchSize: read("maxExportBatchSize"),
    exportTimeoutMillis: read("exportTimeoutMillis"),
  };
  // The SDK would clamp this too, but say so only on its own diagnostic channel, which Sluice does not enable.
  if (settings.maxExportBatchSize > settings.maxQueueSize) {
    problems.push({
      variable: VARIABLES.maxExportBatchSize,
      value: String(settings.maxExportBatchSize),
      reason: `larger than the queue (${VARIABLES.maxQueueSize}=${settings.maxQueueSize})`,
      used: settings.maxQueueSize,
    });
    settings.maxExportBatchSize = settings.maxQueueSize;
  }
  return { settings, problems };
}
