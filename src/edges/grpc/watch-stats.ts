import type { HandlerContext } from "@connectrpc/connect";
import type { WatchStatsRequest, WatchStatsResponse } from "../../../gen/sluice/admin/v1/stats_pb.js";
import type { AliasCacheTally } from "../../cache/response-cache.js";
import { GatewayError } from "../../core/errors.js";
import { delay, type Timers } from "../../core/timers.js";
import type { Logger } from "../../logging/logger.js";
import type { KeyStat, KeyStatsSource } from "../../stats/key-stats.js";
import type { LiveStats } from "../../stats/live-stats.js";
import { toConnectError } from "./connect-errors.js";
import { EXCHANGE } from "./rpc-handler.js";
import { statsToProto } from "./stats-to-proto.js";

/** The cadence of WatchStats snapshots. */
export const SNAPSHOT_INTERVAL_MS = 1_000;

export interface StatsWatchOptions {
  readonly live: LiveStats;
  /** Per-key figures; absent without tenancy. */
  readonly keys?: KeyStatsSource;
  /** Per alias with a response cache; absent when none has one. */
  readonly caches?: () => readonly AliasCacheTally[];
  readonly timers: Timers;
  readonly maxWatchers: number;
  /** Throws `unauthenticated` for a caller who may not watch; a no-op when the console is open. */
  readonly authorize: (authorization: string | undefined) => void;
  readonly logger: Logger;
}

/** sluice.admin.v1.AdminService/WatchStats, and what the server needs to bound and end it. */
export interface StatsWatch {
  watchStats(request: WatchStatsRequest, ctx: HandlerContext): AsyncGenerator<WatchStatsResponse>;
  /** Streams running now; for tests that prove a departed client is released. */
  readonly watchers: number;
  /** Ends every stream (status OK) and refuses new ones: the server is closing. */
  close(): void;
}

/**
 * WatchStats: a snapshot at once, then one every second on `timers`, until
 * the client leaves (the exchange's departure signal, or connect's own for
 * in-memory transports), its deadline passes, or the server closes. The
 * number of streams is bounded; a slot is released from the departure
 * signal itself, because a generator blocked on a write to a vanished
 * client may never resume to run its `finally`.
 */
export function createStatsWatch(options: StatsWatchOptions): StatsWatch {
  let watchers = 0;
  const closing = new AbortController();

  async function keysOrNone(): Promise<readonly KeyStat[]> {
    if (!options.keys) return [];
    try {
      return await options.keys();
    } catch (error) {
      // The store is down or slow: the rest of the snapshot still goes out.
      options.logger.debug({ event: "stats.keys_failed", err: error });
      return [];
    }
  }

  return {
    get watchers() {
      return watchers;
    },
    close() {
      closing.abort(new GatewayError("shutting_down", "the gateway is shutting down"));
    },
    async *watchStats(_request, ctx) {
      try {
        options.authorize(ctx.requestHeader.get("authorization") ?? undefined);
        if (closing.signal.aborted) throw closing.signal.reason;
        if (watchers >= options.maxWatchers) throw new GatewayError("overloaded", `at most ${options.maxWatchers} WatchStats streams at once`);
      } catch (error) {
        throw toConnectError(error);
      }
      const departed = ctx.values.get(EXCHANGE)?.signal;
      const signal = AbortSignal.any([ctx.signal, closing.signal, ...(departed ? [departed] : [])]);
      watchers++;
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        watchers--;
        signal.removeEventListener("abort", release);
      };
      signal.addEventListener("abort", release, { once: true });
      try {
        for (;;) {
          const keys = await keysOrNone();
          if (signal.aborted) break;
          yield statsToProto(options.live.snapshot(), keys, options.caches?.() ?? []);
          if (!(await delay(options.timers, SNAPSHOT_INTERVAL_MS, signal))) break;
        }
        // A deadline ends the call as DEADLINE_EXCEEDED, not OK; a close or a departure ends it quietly.
        if (ctx.signal.aborted && !closing.signal.aborted && !departed?.aborted) ctx.signal.throwIfAborted();
      } finally {
        release();
      }
    },
  };
}
