import type { CacheSettings, ModelRoute } from "../config/config.js";
import type { ChatRequest } from "../core/chat-request.js";
import type { Logger } from "../logging/logger.js";
import type { Instruments } from "../telemetry/metrics.js";
import type { Principal } from "../tenancy/principal.js";
import { exactCacheKeys } from "./cache-key.js";
import { seal, unseal } from "./sealed-entry.js";
import type { CacheStore } from "./cache-store.js";
import { type AnswerCapture, type CachedAnswer, createAnswerCapture, decodeAnswer, encodeAnswer, type Origin } from "./cached-answer.js";

import type { CachePolicy } from "../core/cache-policy.js";

/** What a lookup found, as metrics name it. */
export type CacheResult = "hit_exact" | "miss" | "bypass" | "error";

/** The `sluice-cache` header's value for a result, and `off` for an alias without a cache. */
export function cacheHeaderValue(result: CacheResult | "off"): string {
  return result === "hit_exact" ? "hit-exact" : result;
}

/** The response header (HTTP) and metadata (gRPC) that says what the cache did. */
export const CACHE_HEADER = "sluice-cache";

/** Where a miss's answer goes once it completed; absent when it must not be stored. */
export interface StorePlan {
  readonly key: string;
  readonly secret: Buffer;
  readonly ttlMs: number;
  readonly capture: AnswerCapture;
}

export interface Lookup {
  readonly result: CacheResult;
  /** The entry, on a hit. */
  readonly answer?: CachedAnswer;
  readonly store?: StorePlan;
}

/**
 * The response cache between governance and the providers (docs/caching.md):
 * a lookup before the first attempt, a write after the last delta left.
 * Neither ever fails a request: a slow or failing store is a miss (counted
 * `error`), a failed write is logged and counted.
 */
export interface ResponseCache {
  /** Called only for aliases with a cache. */
  lookup(request: ChatRequest, route: ModelRoute & { readonly cache: NonNullable<ModelRoute["cache"]> }, principal: Principal | undefined, policy: CachePolicy): Promise<Lookup>;
  /** Stores a completed miss's answer, off the client's path. */
  offer(alias: string, plan: StorePlan, origin: Origin): void;
  /** A hit saved `micros` (what it would have cost upstream). */
  saved(alias: string, micros: number): void;
  readonly settings: CacheSettings;
  /** Removes entries: an alias's (`alias`), a key's (`scope`, e.g. `key=team`), or both; resolves with how many. */
  purge(aliases: readonly string[], scope?: string): Promise<number>;
  /** This replica's lookups by result and savings, and the entries held, per alias asked for. */
  stats(aliases: readonly string[]): Promise<AliasCacheStats[]>;
}

/** One alias's cache, as GetCacheStats reports it. */
export interface AliasCacheStats {
  readonly alias: string;
  readonly hits: number;
  readonly misses: number;
  readonly bypasses: number;
  readonly errors: number;
  readonly hitRate: number;
  readonly entries: number;
  readonly savedMicros: number;
}

export interface ResponseCacheOptions {
  readonly store: CacheStore;
  readonly settings: CacheSettings;
  readonly logger: Logger;
  readonly instruments?: Instruments;
  readonly now?: () => number;
}

/**
 * The part of a stored key before the request's hash: per alias and scope,
 * in base64url (aliases may hold `:`), so that purging an alias's or a
 * key's entries is a prefix.
 */
export function entryPrefix(alias: string, scope?: string): string {
  const a = Buffer.from(alias).toString("base64url");
  return scope === undefined ? `exact:${a}:` : `exact:${a}:${Buffer.from(scope).toString("base64url")}:`;
}

/** Whose entries a request may read: its key's (scope `key`; anonymous callers share one scope), or everyone's. */
export function scopeOf(route: { readonly cache: NonNullable<ModelRoute["cache"]> }, principal: Principal | undefined): string {
  return route.cache.scope === "global" ? "*global" : `key=${principal?.name ?? "*anonymous"}`;
}

const NONE = Symbol("timed out");

export function createResponseCache(options: ResponseCacheOptions): ResponseCache {
  const { store, settings, logger, instruments } = options;
  const now = options.now ?? Date.now;

  /** Per alias since start, for GetCacheStats (metrics carry the same counts for Prometheus). */
  const tallies = new Map<string, { hit_exact: number; miss: number; bypass: number; error: number; savedMicros: number }>();
  const tally = (alias: string) => {
    let t = tallies.get(alias);
    if (!t) tallies.set(alias, (t = { hit_exact: 0, miss: 0, bypass: 0, error: 0, savedMicros: 0 }));
    return t;
  };
  const counted = (alias: string, result: CacheResult, startedAt: number): void => {
    tally(alias)[result]++;
    instruments?.cacheLookups.add(1, { "gen_ai.request.model": alias, "sluice.cache.result": result });
    if (result !== "bypass") instruments?.cacheLookupDuration.record((performance.now() - startedAt) / 1000, { "gen_ai.request.model": alias });
  };

  /** The store's answer, or NONE once `lookupTimeoutMs` passed (the late answer is dropped). */
  const bounded = (work: Promise<string | undefined>): Promise<string | undefined | typeof NONE> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<typeof NONE>((resolve) => (timer = setTimeout(resolve, settings.lookupTimeoutMs, NONE)));
    return Promise.race([work, late]).finally(() => clearTimeout(timer));
  };

  return {
    settings,
    async lookup(request, route, principal, policy) {
      const startedAt = performance.now();
      const alias = route.alias;
      const scope = scopeOf(route, principal);
      const keys = exactCacheKeys(request, scope);
      const key = `${entryPrefix(alias, scope)}${keys.id}`;
      const store: StorePlan | undefined =
        policy === "no_store" || policy === "bypass"
          ? undefined
          : { key, secret: keys.secret, ttlMs: route.cache.exactTtlMs, capture: createAnswerCapture({ maxBytes: settings.maxEntryBytes, toolCalls: route.cache.cacheToolCalls }) };
      if (policy === "no_lookup" || policy === "bypass") {
        counted(alias, "bypass", startedAt);
        return { result: "bypass", ...(store ? { store } : {}) };
      }
      let text: string | undefined | typeof NONE;
      try {
        text = await bounded(options.store.get(key));
      } catch (error) {
        logger.warn({ event: "cache.lookup_failed", alias, error: error instanceof Error ? error.message : String(error) });
        text = NONE;
      }
      if (text === NONE) {
        counted(alias, "error", startedAt);
        return { result: "error", ...(store ? { store } : {}) };
      }
      const opened = text === undefined ? undefined : unseal(text, keys.secret);
      const answer = opened === undefined ? undefined : decodeAnswer(opened);
      if (!answer) {
        counted(alias, "miss", startedAt);
        return { result: "miss", ...(store ? { store } : {}) };
      }
      counted(alias, "hit_exact", startedAt);
      return { result: "hit_exact", answer };
    },

    async purge(aliases, scope) {
      let n = 0;
      for (const alias of aliases) n += await store.purge(entryPrefix(alias, scope));
      return n;
    },

    async stats(aliases) {
      return Promise.all(
        aliases.map(async (alias) => {
          const t = tally(alias);
          const looked = t.hit_exact + t.miss + t.error;
          return {
            alias,
            hits: t.hit_exact,
            misses: t.miss,
            bypasses: t.bypass,
            errors: t.error,
            hitRate: looked === 0 ? 0 : t.hit_exact / looked,
            entries: await store.size(entryPrefix(alias)),
            savedMicros: t.savedMicros,
          };
        }),
      );
    },

    saved(alias, micros) {
      tally(alias).savedMicros += micros;
      if (micros > 0) instruments?.cacheSaved.add(micros, { "gen_ai.request.model": alias });
    },

    offer(alias, plan, origin) {
      const { answer, verdict } = plan.capture.result(origin, now());
      if (!answer) {
        instruments?.cacheWrites.add(1, { "gen_ai.request.model": alias, "sluice.cache.write": verdict });
        return;
      }
      store.set(plan.key, seal(encodeAnswer(answer), plan.secret), plan.ttlMs).then(
        () => {
          instruments?.cacheWrites.add(1, { "gen_ai.request.model": alias, "sluice.cache.write": "stored" });
          logger.debug({ event: "cache.stored", alias, requestId: origin.requestId });
        },
        (error: unknown) => {
          instruments?.cacheWrites.add(1, { "gen_ai.request.model": alias, "sluice.cache.write": "failed" });
          logger.warn({ event: "cache.write_failed", alias, requestId: origin.requestId, error: error instanceof Error ? error.message : String(error) });
        },
      );
    },
  };
}
