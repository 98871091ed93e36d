import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { BreakerState, type WatchStatsResponse, WatchStatsResponseSchema } from "../../../gen/sluice/admin/v1/stats_pb.js";
import type { AliasCacheTally } from "../../cache/response-cache.js";
import type { KeyStat } from "../../stats/key-stats.js";
import type { BreakerStateName, StatsSnapshot } from "../../stats/live-stats.js";

function breakerState(state: BreakerStateName): BreakerState {
  switch (state) {
    case "closed":
      return BreakerState.CLOSED;
    case "half_open":
      return BreakerState.HALF_OPEN;
    case "open":
      return BreakerState.OPEN;
  }
}

/** Optional numbers set only when present: a proto3 `optional` left unset reads as absent, not 0. */
function some<K extends string, V, W>(key: K, value: V | undefined, map: (v: V) => W): { [P in K]?: W } {
  return (value === undefined ? {} : { [key]: map(value) }) as { [P in K]?: W };
}

const same = <V>(v: V): V => v;

/** A live-statistics snapshot, the per-key figures and the caches' tallies as one WatchStats message. */
export function statsToProto(snapshot: StatsSnapshot, keys: readonly KeyStat[], caches: readonly AliasCacheTally[] = []): WatchStatsResponse {
  return create(WatchStatsResponseSchema, {
    time: timestampFromMs(snapshot.timeMs),
    startedAt: timestampFromMs(snapshot.startedAtMs),
    activeStreams: snapshot.activeStreams,
    deltasPerSecond: snapshot.deltasPerSecond,
    ttft: {
      ...some("p50Ms", snapshot.ttft.p50Ms, same),
      ...some("p99Ms", snapshot.ttft.p99Ms, same),
      samples: BigInt(snapshot.ttft.samples),
      windowSeconds: snapshot.ttft.windowSeconds,
    },
    series: snapshot.series.map((p) => ({
      timeMs: BigInt(p.timeMs),
      deltas: p.deltas,
      streamsEnded: p.streamsEnded,
      ...some("ttftP50Ms", p.ttftP50Ms, same),
      ...some("ttftP99Ms", p.ttftP99Ms, same),
    })),
    outcomes: snapshot.outcomes.map((o) => ({ outcome: o.outcome, total: BigInt(o.total), lastMinute: o.lastMinute })),
    clientAborts: BigInt(snapshot.clientAborts),
    attempts: {
      retries: BigInt(snapshot.attempts.retries),
      failovers: BigInt(snapshot.attempts.failovers),
      hedgesStarted: BigInt(snapshot.attempts.hedgesStarted),
      hedgesWon: BigInt(snapshot.attempts.hedgesWon),
    },
    breakers: snapshot.breakers.map((b) => ({ target: b.target, state: breakerState(b.state), aliases: [...b.aliases] })),
    queues: snapshot.queues.map((q) => ({ provider: q.provider, waiting: q.waiting, inFlight: q.inFlight })),
    keys: keys.map((k) => ({
      name: k.name,
      requests: BigInt(k.requests),
      inputTokens: BigInt(k.inputTokens),
      outputTokens: BigInt(k.outputTokens),
      spendUsdMicros: BigInt(k.spendMicros),
      ...some("budgetUsdMicros", k.budgetMicros, BigInt),
      ...some("budgetRemainingUsdMicros", k.budgetRemainingMicros, BigInt),
      ...some("requestsPerMinute", k.requestsPerMinute, same),
      ...some("tokensPerMinute", k.tokensPerMinute, BigInt),
      ...some("concurrentStreams", k.concurrentStreams, same),
      ...some("requestsRemaining", k.requestsRemaining, same),
      ...some("tokensRemaining", k.tokensRemaining, BigInt),
      ...some("streamsActive", k.streamsActive, same),
    })),
    caches: caches.map((c) => ({
      alias: c.alias,
      hits: BigInt(c.hits),
      semanticHits: BigInt(c.semanticHits),
      misses: BigInt(c.misses),
      bypasses: BigInt(c.bypasses),
      errors: BigInt(c.errors),
      hitRate: c.hitRate,
      savedUsdMicros: BigInt(Math.round(c.savedMicros)),
    })),
  });
}
