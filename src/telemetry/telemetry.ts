import type { MetricReader } from "@opentelemetry/sdk-metrics";
import type { SpanExporter } from "@opentelemetry/sdk-trace";
import type { TelemetryConfig } from "../config/settings.js";
import type { StreamObserver, TenancyObserver } from "../flow/observer.js";
import type { Logger } from "../logging/logger.js";
import type { LiveStatsSink } from "../stats/live-stats.js";
import { createMetrics, type GaugeSources, type Metrics } from "./metrics.js";
import { createStreamTelemetry, type StreamTelemetryRequest } from "./stream-telemetry.js";
import { createTenancyMetrics } from "./tenancy-metrics.js";
import { createTracing, type Tracing } from "./tracing.js";

export type { StreamTelemetryRequest };

/**
 * Sluice's telemetry: OpenTelemetry traces (exported over OTLP/HTTP when
 * configured) and metrics (Prometheus text at /metrics), and the one
 * per-stream observer the pipeline reports to.
 */
export interface Telemetry {
  readonly tracing: Tracing;
  /** Undefined when metrics are disabled. */
  readonly metrics?: Metrics;
  stream(request: StreamTelemetryRequest): StreamObserver;
  /** Tenancy's events as metrics (no hooks when metrics are disabled). */
  readonly tenancy: TenancyObserver;
  shutdown(): Promise<void>;
}

export interface TelemetryOptions {
  readonly config: TelemetryConfig;
  readonly env: NodeJS.ProcessEnv;
  readonly logger: Logger;
  readonly sources: GaugeSources;
  /** Tests: spans go here instead of OTLP. */
  readonly spanExporter?: SpanExporter;
  /** Tests: an extra metric reader. */
  readonly metricReaders?: readonly MetricReader[];
  /** The console's live statistics, fed by every stream's observer. */
  readonly live?: LiveStatsSink;
}

export function createTelemetry(options: TelemetryOptions): Telemetry {
  const tracing = createTracing({ config: options.config, env: options.env, logger: options.logger, ...(options.spanExporter ? { exporter: options.spanExporter } : {}) });
  const metrics = options.config.metrics.enabled
    ? createMetrics({ serviceName: options.env.OTEL_SERVICE_NAME ?? options.config.serviceName, sources: options.sources, ...(options.metricReaders ? { readers: options.metricReaders } : {}) })
    : undefined;
  return {
    tracing,
    ...(metrics ? { metrics } : {}),
    tenancy: metrics ? createTenancyMetrics(metrics.meter) : {},
    stream: (request) =>
      createStreamTelemetry({
        logger: options.logger,
        tracing,
        ...(metrics ? { instruments: metrics.instruments } : {}),
        captureContent: options.config.tracing.captureContent,
        ...(options.live ? { live: options.live } : {}),
        ...request,
      }),
    async shutdown() {
      await Promise.all([tracing.shutdown(), metrics?.shutdown()]);
    },
  };
}
