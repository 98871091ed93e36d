import type { KeyLimits, KeySettings } from "../config/config.js";
import type { Timers } from "../core/timers.js";
import { subjectOf, type TenantStore } from "../store/tenant-store.js";
import { keyId } from "../tenancy/principal.js";

/** Keys one snapshot shows at most, busiest first: the table stays readable and a snapshot stays small. */
export const MAX_KEYS_SHOWN = 100;

/** A virtual key's usage in its current period and its limits, as the live view shows it. */
export interface KeyStat {
  readonly name: string;
  readonly requests: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly spendMicros: number;
  readonly budgetMicros?: number;
  /** Budget minus spend and the reservations of running streams. */
  readonly budgetRemainingMicros?: number;
  readonly requestsPerMinute?: number;
  readonly tokensPerMinute?: number;
  readonly concurrentStreams?: number;
  /** Left in the current minute window, when the key has the limit and the store could say. */
  readonly requestsRemaining?: number;
  readonly tokensRemaining?: number;
  /** Streams holding one of the key's slots now (every replica's, with Redis), when the store could say. */
  readonly streamsActive?: number;
}

/** Per-key figures for WatchStats; undefined where the gateway has no tenancy. */
export type KeyStatsSource = () => Promise<readonly KeyStat[]>;

export interface TenantKeyStatsOptions {
  readonly store: TenantStore;
  /** The configured keys of the configuration in force. */
  readonly configured: () => ReadonlyArray<KeySettings & { readonly sha256: string }>;
  readonly timers: Pick<Timers, "now">;
}

/**
 * Per-key figures from the tenant store: the period totals GetUsage reads
 * (requests, tokens, spend, reservations) for configured and runtime keys,
 * and the headroom of the keys shown (read after ranking, so a large key
 * table costs no headroom reads for keys the snapshot leaves out).
 * Computed at most once per second whatever the number of watchers, so
 * the store sees one usage and one headroom read per key per second, not
 * one per watcher.
 */
export function createTenantKeyStats(options: TenantKeyStatsOptions): KeyStatsSource {
  let cached: { second: number; stats: Promise<readonly KeyStat[]> } | undefined;

  async function read(): Promise<readonly KeyStat[]> {
    const runtime = await options.store.listKeys();
    const keys = [...options.configured(), ...runtime];
    // Figures are kept under each key's id (its subject); the name is what the table shows.
    const subjects = new Map<KeyStat, { readonly subject: string; readonly limits: KeyLimits }>();
    const usage = await Promise.all(
      keys.map(async (key): Promise<KeyStat> => {
        const subject = subjectOf({ level: "key", id: keyId(key.sha256) });
        const totals = await options.store.usage(subject, key.budget?.period ?? "month");
        const { limits, budget } = key;
        const stat: KeyStat = {
          name: key.name,
          requests: totals.requests,
          inputTokens: totals.inputTokens,
          outputTokens: totals.outputTokens,
          spendMicros: totals.spendMicros,
          ...(budget ? { budgetMicros: budget.usdMicros, budgetRemainingMicros: budget.usdMicros - totals.spendMicros - Math.max(0, totals.reservedMicros) } : {}),
          ...(limits.requestsPerMinute === undefined ? {} : { requestsPerMinute: limits.requestsPerMinute }),
          ...(limits.tokensPerMinute === undefined ? {} : { tokensPerMinute: limits.tokensPerMinute }),
          ...(limits.concurrentStreams === undefined ? {} : { concurrentStreams: limits.concurrentStreams }),
        };
        subjects.set(stat, { subject, limits });
        return stat;
      }),
    );
    const shown = usage.sort((a, b) => b.requests - a.requests || a.name.localeCompare(b.name)).slice(0, MAX_KEYS_SHOWN);
    return Promise.all(
      shown.map(async (stat): Promise<KeyStat> => {
        const { subject, limits } = subjects.get(stat)!;
        const room = await options.store.headroom(subject, limits);
        return {
          ...stat,
          ...(room.requestsRemaining === undefined ? {} : { requestsRemaining: room.requestsRemaining }),
          ...(room.tokensRemaining === undefined ? {} : { tokensRemaining: room.tokensRemaining }),
          ...(room.streamsActive === undefined ? {} : { streamsActive: room.streamsActive }),
        };
      }),
    );
  }

  return () => {
    const second = Math.floor(options.timers.now() / 1000);
    if (cached?.second !== second) {
      const stats = read();
      cached = { second, stats };
      // A failed read is not kept: the next second tries again.
      stats.catch(() => {
        if (cached?.stats === stats) cached = undefined;
      });
    }
    return cached.stats;
  };
}
