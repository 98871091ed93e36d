import type { Timers } from "../core/timers.js";
import { createLatencyHistogram, type LatencyHistogram, latencyQuantile, mergeLatency, recordLatency } from "./latency-histogram.js";
import { createSecondRing } from "./second-ring.js";

/** Seconds of history the ring keeps: the chart's five minutes. */
export const SERIES_SECONDS = 300;
/** The window of the headline TTFT figures and the per-outcome "last minute" counts. */
export const WINDOW_SECONDS = 60;

export type BreakerStateName = "closed" | "half_open" | "open";

/** What the stream observer reports as streams run (telemetry/stream-telemetry.ts calls it). Each call is a few integer operations. */
export interface LiveStatsSink {
  /** An attempt that is not the request's first: a retry, a failover or a hedge. */
  attempt(kind: "retry" | "failover" | "hedge"): void;
  hedgeWon(): void;
  /** One delta relayed to a client. */
  delta(): void;
  /** A stream's first content delta, `ttftMs` after the stream began. */
  firstDelta(ttftMs: number): void;
  /** A stream ended: `ok` or its error code; `clientAbort` when the client left or its deadline passed. */
  ended(outcome: string, clientAbort: boolean): void;
}

/** The gauges read at snapshot time, from their owners (stream registry, provider gates, breakers). */
export interface LiveSources {
  activeStreams(): number;
  queues(): Iterable<{ readonly provider: string; readonly waiting: number; readonly inFlight: number }>;
  breakers(): Iterable<BreakerSnapshot>;
}

/** A target's breaker, and the aliases that route to it (the names callers use). */
export interface BreakerSnapshot {
  readonly target: string;
  readonly state: BreakerStateName;
  readonly aliases: readonly string[];
}

export interface SeriesPoint {
  readonly timeMs: number;
  readonly deltas: number;
  readonly streamsEnded: number;
  readonly ttftP50Ms?: number;
  readonly ttftP99Ms?: number;
}

/** One moment of this replica, as WatchStats sends it (keys aside: they come from the tenant store). */
export interface StatsSnapshot {
  readonly timeMs: number;
  readonly startedAtMs: number;
  readonly activeStreams: number;
  readonly deltasPerSecond: number;
  readonly ttft: { readonly p50Ms?: number; readonly p99Ms?: number; readonly samples: number; readonly windowSeconds: number };
  readonly series: readonly SeriesPoint[];
  readonly outcomes: ReadonlyArray<{ readonly outcome: string; readonly total: number; readonly lastMinute: number }>;
  readonly clientAborts: number;
  readonly attempts: { readonly retries: number; readonly failovers: number; readonly hedgesStarted: number; readonly hedgesWon: number };
  readonly breakers: readonly BreakerSnapshot[];
  readonly queues: ReadonlyArray<{ readonly provider: string; readonly waiting: number; readonly inFlight: number }>;
}

export interface LiveStats extends LiveStatsSink {
  snapshot(): StatsSnapshot;
}

interface Second {
  deltas: number;
  ended: number;
  /** Allocated on the second's first TTFT sample. */
  ttft: LatencyHistogram | undefined;
  /** Allocated on the second's first ended stream; keys are "ok" and error codes (a closed list). */
  outcomes: Map<string, number> | undefined;
}

export interface LiveStatsOptions {
  readonly sources: LiveSources;
  /** Its `now()` places events in seconds; tests move it. */
  readonly timers: Pick<Timers, "now">;
}

/**
 * The console's live numbers, kept in one place: cumulative counters since
 * start, and a ring of per-second buckets (deltas, ended streams by
 * outcome, a TTFT histogram) for rates, the chart and the last-minute
 * figures. Fed by the per-stream observer; gauges (active streams, queues,
 * breakers) are read from their owners when a snapshot is taken. Memory is
 * bounded by the ring's size, not by traffic; outcome keys come from a
 * closed list of codes.
 */
export function createLiveStats(options: LiveStatsOptions): LiveStats {
  const { sources, timers } = options;
  const startedAtMs = timers.now();
  const ring = createSecondRing<Second>(
    SERIES_SECONDS + 1,
    () => ({ deltas: 0, ended: 0, ttft: undefined, outcomes: undefined }),
    (s) => {
      s.deltas = 0;
      s.ended = 0;
      s.ttft = undefined;
      s.outcomes = undefined;
    },
  );
  const outcomeTotals = new Map<string, number>();
  const attempts = { retries: 0, failovers: 0, hedgesStarted: 0, hedgesWon: 0 };
  let clientAborts = 0;
  const second = () => Math.floor(timers.now() / 1000);

  return {
    attempt(kind) {
      if (kind === "retry") attempts.retries++;
      else if (kind === "failover") attempts.failovers++;
      else attempts.hedgesStarted++;
    },
    hedgeWon() {
      attempts.hedgesWon++;
    },
    delta() {
      ring.at(second()).deltas++;
    },
    firstDelta(ttftMs) {
      const slot = ring.at(second());
      slot.ttft ??= createLatencyHistogram();
      recordLatency(slot.ttft, ttftMs);
    },
    ended(outcome, clientAbort) {
      const slot = ring.at(second());
      slot.ended++;
      slot.outcomes ??= new Map();
      slot.outcomes.set(outcome, (slot.outcomes.get(outcome) ?? 0) + 1);
      outcomeTotals.set(outcome, (outcomeTotals.get(outcome) ?? 0) + 1);
      if (clientAbort) clientAborts++;
    },
    snapshot() {
      const timeMs = timers.now();
      const now = Math.floor(timeMs / 1000);
      const series: SeriesPoint[] = [];
      const window = createLatencyHistogram();
      const lastMinute = new Map<string, number>();
      // The current second is still filling: the series ends with the last whole one.
      for (let s = now - SERIES_SECONDS; s < now; s++) {
        const slot = ring.peek(s);
        const p50 = slot?.ttft && latencyQuantile(slot.ttft, 0.5);
        const p99 = slot?.ttft && latencyQuantile(slot.ttft, 0.99);
        series.push({
          timeMs: s * 1000,
          deltas: slot?.deltas ?? 0,
          streamsEnded: slot?.ended ?? 0,
          ...(p50 === undefined ? {} : { ttftP50Ms: p50 }),
          ...(p99 === undefined ? {} : { ttftP99Ms: p99 }),
        });
      }
      for (let s = now - WINDOW_SECONDS + 1; s <= now; s++) {
        const slot = ring.peek(s);
        if (slot?.ttft) mergeLatency(window, slot.ttft);
        for (const [outcome, count] of slot?.outcomes ?? []) lastMinute.set(outcome, (lastMinute.get(outcome) ?? 0) + count);
      }
      const p50Ms = latencyQuantile(window, 0.5);
      const p99Ms = latencyQuantile(window, 0.99);
      return {
        timeMs,
        startedAtMs,
        activeStreams: sources.activeStreams(),
        deltasPerSecond: ring.peek(now - 1)?.deltas ?? 0,
        ttft: { ...(p50Ms === undefined ? {} : { p50Ms }), ...(p99Ms === undefined ? {} : { p99Ms }), samples: window.total, windowSeconds: WINDOW_SECONDS },
        series,
        outcomes: [...outcomeTotals].map(([outcome, total]) => ({ outcome, total, lastMinute: lastMinute.get(outcome) ?? 0 })).sort((a, b) => (a.outcome === "ok" ? -1 : b.outcome === "ok" ? 1 : a.outcome.localeCompare(b.outcome))),
        clientAborts,
        attempts: { ...attempts },
        breakers: [...sources.breakers()].sort((a, b) => a.target.localeCompare(b.target)),
        queues: [...sources.queues()].map((q) => ({ provider: q.provider, waiting: q.waiting, inFlight: q.inFlight })).sort((a, b) => a.provider.localeCompare(b.provider)),
      };
    },
  };
}
