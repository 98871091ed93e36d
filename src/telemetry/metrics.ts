import type { IncomingMessage, ServerResponse } from "node:http";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { Attributes, Counter, Histogram, Meter } from "@opentelemetry/api";
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { AggregationType, MeterProvider, type MetricReader } from "@opentelemetry/sdk-metrics";
import type { ReloadOutcome } from "../config/live-config.js";
import { createSeriesCounters, type SeriesCounters } from "./series-counters.js";

/** Bucket boundaries the GenAI semantic conventions give for each histogram (seconds). */
const BUCKETS = {
  "gen_ai.server.request.duration": [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
  "gen_ai.server.time_to_first_token": [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0],
  "gen_ai.server.time_per_output_token": [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5],
  "sluice.queue.wait": [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  // The gateway's own part of a first byte: sub-millisecond when all is well, tens of ms when a stage or the loop is slow.
  "sluice.overhead": [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
} as const;

/** Every result a configuration reload is counted under (a record, so a new outcome must be listed). */
const RELOAD_RESULTS: Record<ReloadOutcome, true> = { reloaded: true, failed: true, skipped: true };

/** The instruments stages record into. Names and units follow the GenAI conventions where they exist. */
export interface Instruments {
  readonly requestDuration: Histogram;
  readonly timeToFirstToken: Histogram;
  readonly timePerOutputToken: Histogram;
  /** Tokens by `gen_ai.token.type`: input, output, cached_input, reasoning. */
  readonly tokens: Counter;
  /** Streams ended, by `sluice.outcome`. */
  readonly streams: Counter;
  /** Deltas relayed, added when their stream ends (not once per delta). */
  readonly deltas: Counter;
  /** Streams whose client left (cancel, disconnect, deadline). */
  readonly clientAborts: Counter;
  /** Deltas the upstream produced after the client had left: work for nobody. */
  readonly deltasAfterAbort: Counter;
  /** Upstream attempts, by `sluice.attempt.outcome`. */
  readonly attempts: Counter;
  readonly retries: Counter;
  readonly failovers: Counter;
  readonly hedgesStarted: Counter;
  readonly hedgesWon: Counter;
  readonly queueWait: Histogram;
  /** `sluice-overhead-ms` of each call, by `sluice.edge` (call/overhead.ts says what it counts). */
  readonly overhead: Histogram;
  /** Requests shed by admission, by `sluice.shed.reason`. */
  readonly shed: Counter;
  readonly configReloads: Counter;
  /** Response-cache lookups, by `sluice.cache.result` (hit_exact, miss, bypass, error). */
  readonly cacheLookups: Counter;
  readonly cacheLookupDuration: Histogram;
  /** What hits would have cost at the producing target's price, in micro-dollars. */
  readonly cacheSaved: Counter;
  /** Answers offered to the cache, by `sluice.cache.write` (stored, failed, and why others were not). */
  readonly cacheWrites: Counter;
  /** Answers the gateway ended itself past their max_tokens or their key's budget, by `sluice.cut.reason`. */
  readonly streamCuts: Counter;
  /** Where the per-stream counters (streams, deltas, tokens, attempts) are summed until a collection. */
  readonly series: SeriesCounters;
}

/** What the observable gauges read when Prometheus scrapes. */
export interface GaugeSources {
  activeStreams(): number;
  /** Waiting and in-flight per provider. */
  queues(): Iterable<{ readonly provider: string; readonly waiting: number; readonly inFlight: number }>;
  /** Breaker state per target key: 0 closed, 1 half-open, 2 open. */
  breakers(): Iterable<{ readonly target: string; readonly state: number }>;
  /** Upstream connections per provider pool. */
  connections(): Iterable<{ readonly provider: string; readonly connected: number; readonly busy: number }>;
}

export interface Metrics {
  readonly instruments: Instruments;
  /**
   * Exports the shed counter at 0 for these providers (the configured ones,
   * at start and after each reload), so that its per-provider series exist
   * before the first request is shed.
   */
  knowProviders(names: Iterable<string>): void;
  /** Serves the Prometheus text exposition (GET /metrics). */
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** An extra reader, for tests (in-memory export). */
  readonly meter: Meter;
  shutdown(): Promise<void>;
}

export interface MetricsOptions {
  readonly serviceName: string;
  readonly sources: GaugeSources;
  /** More readers (tests attach an in-memory one). */
  readonly readers?: readonly MetricReader[];
}

/**
 * The OpenTelemetry meter behind `/metrics`: histograms with the GenAI
 * conventions' bucket boundaries, Sluice's own counters, and gauges read at
 * scrape time. Every attribute value comes from configuration or a closed
 * list (aliases, providers, targets, codes, outcomes), never from a client,
 * so the number of series is bounded by the configuration.
 */
export function createMetrics(options: MetricsOptions): Metrics {
  const prometheus = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
  const provider = new MeterProvider({
    resource: resourceFromAttributes({ "service.name": options.serviceName }),
    readers: [prometheus, ...(options.readers ?? [])],
    views: Object.entries(BUCKETS).map(([instrumentName, boundaries]) => ({
      instrumentName,
      aggregation: { type: AggregationType.EXPLICIT_BUCKET_HISTOGRAM, options: { boundaries: [...boundaries] } },
    })),
  });
  const meter = provider.getMeter("sluice");
  const instruments: Instruments = {
    requestDuration: meter.createHistogram("gen_ai.server.request.duration", { unit: "s", description: "Generative AI server request duration, to the last delta or the error." }),
    timeToFirstToken: meter.createHistogram("gen_ai.server.time_to_first_token", { unit: "s", description: "Time to the first delta of successful responses." }),
    timePerOutputToken: meter.createHistogram("gen_ai.server.time_per_output_token", { unit: "s", description: "Time per output token after the first, for successful responses." }),
    tokens: meter.createCounter("sluice.tokens", { unit: "{token}", description: "Tokens by gen_ai.token.type (input, output, cached_input, reasoning)." }),
    streams: meter.createCounter("sluice.streams", { unit: "{stream}", description: "Streams ended, by outcome." }),
    deltas: meter.createCounter("sluice.deltas", { unit: "{delta}", description: "Deltas relayed to clients, counted when each stream ends." }),
    clientAborts: meter.createCounter("sluice.client.aborts", { unit: "{stream}", description: "Streams whose client cancelled, disconnected or passed its deadline." }),
    deltasAfterAbort: meter.createCounter("sluice.upstream.deltas_after_abort", { unit: "{delta}", description: "Deltas decoded from upstream after the client had left." }),
    attempts: meter.createCounter("sluice.upstream.attempts", { unit: "{attempt}", description: "Upstream attempts, by outcome." }),
    retries: meter.createCounter("sluice.retries", { unit: "{attempt}", description: "Attempts on a target the request had already tried." }),
    failovers: meter.createCounter("sluice.failovers", { unit: "{attempt}", description: "Attempts on another target after a failure." }),
    hedgesStarted: meter.createCounter("sluice.hedges.started", { unit: "{attempt}", description: "Hedge attempts started." }),
    hedgesWon: meter.createCounter("sluice.hedges.won", { unit: "{attempt}", description: "Hedge attempts that produced the first delta." }),
    queueWait: meter.createHistogram("sluice.queue.wait", { unit: "s", description: "Time spent in a provider's admission queue." }),
    overhead: meter.createHistogram("sluice.overhead", { unit: "s", description: "The gateway's own time to a call's first byte, without the upstream's wait (sluice-overhead-ms)." }),
    shed: meter.createCounter("sluice.requests.shed", { unit: "{request}", description: "Requests refused by admission, by reason." }),
    configReloads: meter.createCounter("sluice.config.reloads", { unit: "{reload}", description: "Configuration reloads, by result." }),
    cacheLookups: meter.createCounter("sluice.cache.lookups", { unit: "{lookup}", description: "Response-cache lookups, by result." }),
    cacheLookupDuration: meter.createHistogram("sluice.cache.lookup.duration", { unit: "s", description: "Time a response-cache lookup took (hits and misses)." }),
    cacheSaved: meter.createCounter("sluice.cache.saved_usd_micros", { unit: "{usd_micro}", description: "What cache hits would have cost upstream, in micro-dollars." }),
    cacheWrites: meter.createCounter("sluice.cache.writes", { unit: "{answer}", description: "Answers offered to the response cache, by what became of them." }),
    streamCuts: meter.createCounter("sluice.streams.cut", { unit: "{stream}", description: "Answers the gateway ended (finish length) because the upstream passed max_tokens or the key's budget, by reason." }),
    series: createSeriesCounters(),
  };

  // A counter appears in the exposition with its first add(). These count rare
  // events, so a fresh gateway would show "No data" where it means 0. Where the
  // attributes form a closed list (reload results, shed reason per provider), each
  // series starts at 0; the others are keyed by alias × target × edge (× outcome),
  // so one series with no attributes stands at 0 for sum() and rate() to read.
  for (const counter of [instruments.retries, instruments.failovers, instruments.hedgesStarted, instruments.hedgesWon, instruments.clientAborts, instruments.deltasAfterAbort, instruments.streamCuts]) {
    counter.add(0);
  }
  for (const result of Object.keys(RELOAD_RESULTS)) instruments.configReloads.add(0, { result });

  const { sources } = options;
  const eventLoop = monitorEventLoopDelay({ resolution: 10 });
  eventLoop.enable();
  const active = meter.createObservableGauge("sluice.streams.active", { unit: "{stream}", description: "Streams in flight." });
  active.addCallback((r) => r.observe(sources.activeStreams()));
  // Observable callbacks run before the synchronous instruments are read, in every collection.
  meter.addBatchObservableCallback(() => instruments.series.drain(), [active]);
  const queueDepth = meter.createObservableGauge("sluice.queue.depth", { unit: "{request}", description: "Requests waiting in a provider's admission queue." });
  const queueInFlight = meter.createObservableGauge("sluice.provider.in_flight", { unit: "{stream}", description: "Streams in flight to a provider." });
  meter.addBatchObservableCallback(
    (r) => {
      for (const q of sources.queues()) {
        r.observe(queueDepth, q.waiting, { "sluice.provider": q.provider });
        r.observe(queueInFlight, q.inFlight, { "sluice.provider": q.provider });
      }
    },
    [queueDepth, queueInFlight],
  );
  meter.createObservableGauge("sluice.breaker.state", { unit: "1", description: "Circuit breaker per target: 0 closed, 1 half-open, 2 open." }).addCallback((r) => {
    for (const b of sources.breakers()) r.observe(b.state, { "sluice.target": b.target });
  });
  const connected = meter.createObservableGauge("sluice.upstream.connections", { unit: "{connection}", description: "Open upstream connections per provider." });
  const busy = meter.createObservableGauge("sluice.upstream.connections.busy", { unit: "{connection}", description: "Upstream connections carrying a request." });
  meter.addBatchObservableCallback(
    (r) => {
      for (const c of sources.connections()) {
        r.observe(connected, c.connected, { "sluice.provider": c.provider });
        r.observe(busy, c.busy, { "sluice.provider": c.provider });
      }
    },
    [connected, busy],
  );
  const delay = meter.createObservableGauge("nodejs.eventloop.delay", { unit: "s", description: "Event-loop delay since the previous scrape, by percentile (p50, p99, max)." });
  meter.addBatchObservableCallback(
    (r) => {
      r.observe(delay, eventLoop.percentile(50) / 1e9, { "nodejs.eventloop.delay.type": "p50" });
      r.observe(delay, eventLoop.percentile(99) / 1e9, { "nodejs.eventloop.delay.type": "p99" });
      r.observe(delay, eventLoop.max / 1e9, { "nodejs.eventloop.delay.type": "max" });
      eventLoop.reset();
    },
    [delay],
  );
  const heap = meter.createObservableGauge("v8js.memory.heap.used", { unit: "By", description: "V8 heap in use." });
  const rss = meter.createObservableGauge("process.memory.usage", { unit: "By", description: "Resident set size." });
  meter.addBatchObservableCallback(
    (r) => {
      const memory = process.memoryUsage();
      r.observe(heap, memory.heapUsed);
      r.observe(rss, memory.rss);
    },
    [heap, rss],
  );

  return {
    instruments,
    knowProviders(names) {
      for (const provider of names) instruments.shed.add(0, { "sluice.provider": provider, "sluice.shed.reason": "queue" });
    },
    meter,
    handle: (req, res) => prometheus.getMetricsRequestHandler(req, res),
    async shutdown() {
      eventLoop.disable();
      await provider.shutdown();
    },
  };
}

/** Attribute sets are built per stream, never per delta. */
export type MetricAttributes = Attributes;
