import { type Context, context as contexts, defaultTextMapSetter, type SpanOptions, type TextMapGetter, TraceFlags, type Tracer, trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, RandomIdGenerator, type Sampler, type SpanExporter, TraceIdRatioBasedSampler, TracerProvider } from "@opentelemetry/sdk-trace";
import type { TelemetryConfig } from "../config/settings.js";
import type { Logger } from "../logging/logger.js";
import { batchSpanSettingsFromEnv } from "./batch-span-env.js";

/**
 * Where traces go and how context crosses process boundaries. With no
 * exporter nothing is recorded: spans are non-recording spans that still
 * carry trace ids (the caller's, or new ones) on to the provider and into
 * the logs, at a cost measured in the benchmark.
 */
export interface Tracing {
  readonly tracer: Tracer;
  /** True when spans are recorded and exported. */
  readonly recording: boolean;
  /** The W3C trace context (`traceparent`, `tracestate`) in incoming headers, as a parent context. */
  extract(headers: Readonly<Record<string, string | string[] | undefined>>): Context;
  /** `traceparent` / `tracestate` for an outgoing request in `ctx`. */
  inject(ctx: Context): Record<string, string>;
  /** Exports every finished span now (shutdown, tests). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

const getter: TextMapGetter<Readonly<Record<string, string | string[] | undefined>>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

const propagator = new W3CTraceContextPropagator();

/**
 * The sampler the OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG variables
 * name (the trace SDK package no longer reads them itself); parent-based
 * always-on by default, as the specification says.
 */
export function samplerFromEnv(env: NodeJS.ProcessEnv): Sampler {
  const ratio = Number(env.OTEL_TRACES_SAMPLER_ARG);
  const arg = Number.isFinite(ratio) && ratio >= 0 && ratio <= 1 ? ratio : 1;
  switch (env.OTEL_TRACES_SAMPLER) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return new TraceIdRatioBasedSampler(arg);
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(arg) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

export interface TracingOptions {
  readonly config: TelemetryConfig;
  readonly env: NodeJS.ProcessEnv;
  /** Where OTEL_* values that were set but not taken are reported. */
  readonly logger: Logger;
  /** For tests: spans go here instead of an OTLP endpoint. */
  readonly exporter?: SpanExporter;
}

function exporterFor(options: TracingOptions): SpanExporter | undefined {
  if (options.exporter) return options.exporter;
  const { tracing } = options.config;
  const fromEnv = options.env.OTEL_TRACES_EXPORTER ?? (options.env.OTEL_EXPORTER_OTLP_ENDPOINT || options.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ? "otlp" : "none");
  const kind = tracing.exporter ?? (fromEnv === "otlp" ? "otlp" : "none");
  if (kind !== "otlp") return undefined;
  return new OTLPTraceExporter(tracing.endpoint ? { url: tracing.endpoint } : {});
}

/**
 * A tracer for when nothing is exported: its spans record nothing, but each
 * has real ids (the parent's trace id, or a new one), so the access line,
 * `traceresponse` and the `traceparent` sent upstream still correlate a
 * request across services. Two ids per span, from the SDK's fast generator.
 */
function createIdOnlyTracer(): Tracer {
  const ids = new RandomIdGenerator();
  const start = (_name: string, _options?: SpanOptions, ctx?: Context) => {
    const parent = ctx ? trace.getSpanContext(ctx) : undefined;
    const valid = parent !== undefined && trace.isSpanContextValid(parent);
    return trace.wrapSpanContext({
      traceId: valid ? parent.traceId : ids.generateTraceId(),
      spanId: ids.generateSpanId(),
      traceFlags: valid ? parent.traceFlags : TraceFlags.NONE,
    });
  };
  return {
    startSpan: start,
    startActiveSpan: ((name: string, ...rest: unknown[]) => {
      const fn = rest.at(-1) as (span: ReturnType<typeof start>) => unknown;
      return fn(start(name));
    }) as Tracer["startActiveSpan"],
  };
}

export function createTracing(options: TracingOptions): Tracing {
  const exporter = exporterFor(options);
  const extract = (headers: Readonly<Record<string, string | string[] | undefined>>) => propagator.extract(contexts.active(), headers, getter);
  const inject = (ctx: Context) => {
    const carrier: Record<string, string> = {};
    propagator.inject(ctx, carrier, defaultTextMapSetter);
    return carrier;
  };
  if (!exporter) {
    const none = async () => undefined;
    return { tracer: createIdOnlyTracer(), recording: false, extract, inject, flush: none, shutdown: none };
  }
  const batch = batchSpanSettingsFromEnv(options.env);
  for (const problem of batch.problems) options.logger.warn({ event: "tracing.env_ignored", ...problem });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": options.env.OTEL_SERVICE_NAME ?? options.config.serviceName }),
    sampler: samplerFromEnv(options.env),
    spanProcessors: [new BatchSpanProcessor({ exporter, ...batch.settings })],
  });
  return {
    tracer: provider.getTracer("sluice"),
    recording: true,
    extract,
    inject,
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

/** The span context of `ctx` as the W3C `traceresponse` value a caller can look its trace up by. */
export function traceResponse(ctx: Context): string | undefined {
  const span = trace.getSpanContext(ctx);
  if (!span || !trace.isSpanContextValid(span)) return undefined;
  return `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 1).toString(16).padStart(2, "0")}`;
}
