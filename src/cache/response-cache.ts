import type { CacheSettings, ModelRoute } from "../config/config.js";
import type { CachePolicy } from "../core/cache-policy.js";
import type { ChatRequest } from "../core/chat-request.js";
import { seal, sealedBytes, unseal } from "../core/sealed-entry.js";
import type { Logger } from "../logging/logger.js";
import type { Instruments } from "../telemetry/metrics.js";
import type { Principal } from "../tenancy/principal.js";
import { exactCacheKeys } from "./cache-key.js";
import type { CacheStore } from "./cache-store.js";
import { type AnswerCapture, type CachedAnswer, createAnswerCapture, decodeAnswer, encodeAnswer, type Origin } from "./cached-answer.js";
import { splitQuestion } from "./semantic-question.js";
import type { SemanticPlace, SemanticStore } from "./semantic-store.js";

/** What a lookup found, as metrics name it. */
export type CacheResult = "hit_exact" | "hit_semantic" | "miss" | "bypass" | "error";

/** The `sluice-cache` header's value for a result, and `off` for an alias without a cache. */
export function cacheHeaderValue(result: CacheResult | "off"): string {
  return result === "hit_exact" ? "hit-exact" : result === "hit_semantic" ? "hit-semantic" : result === "error" ? "miss" : result;
}

/** The response header (HTTP) and metadata (gRPC) that says what the cache did. */
export const CACHE_HEADER = "sluice-cache";
/** Beside it on a semantic hit: the cosine similarity of the question to the stored one. */
export const CACHE_SIMILARITY_HEADER = "sluice-cache-similarity";

/** Where a miss's answer goes once it completed: the exact cache, the semantic cache, or both. */
export interface StorePlan {
  readonly capture: AnswerCapture;
  readonly exact?: { readonly key: string; readonly secret: Buffer; readonly ttlMs: number };
  readonly semantic?: { readonly place: SemanticPlace; readonly vector: Float32Array; readonly secret: Buffer; readonly ttlMs: number; readonly maxEntries: number };
}

export interface Lookup {
  readonly result: CacheResult;
  /** The entry, on a hit. */
  readonly answer?: CachedAnswer;
  /** A semantic hit's cosine similarity. */
  readonly similarity?: number;
  /** Absent when nothing may be stored (the caller's policy, or nothing to store into). */
  readonly store?: StorePlan;
}

/** Embeds one question with an embedding alias, as the caller (its key, limits and budget). */
export type EmbedQuestion = (question: string, model: string, principal: Principal | undefined, requestId: string, signal: AbortSignal) => Promise<Float32Array>;

/**
 * The response cache between governance and the providers (docs/caching.md):
 * lookups before the first attempt (exact, then semantic), writes after
 * the last delta left. Nothing here ever fails a request: a slow or failing
 * store is a miss (counted `error`), an embedding that fails leaves the
 * exact cache alone, a failed write is logged and counted.
 */
export interface ResponseCache {
  /** Called only for aliases with a cache. `signal`: the request's (the embedding stops when it ends). */
  lookup(request: ChatRequest, route: CachedRoute, principal: Principal | undefined, policy: CachePolicy, context: { readonly requestId: string; readonly signal: AbortSignal }): Promise<Lookup>;
  /** Stores a completed miss's answer, off the client's path. */
  offer(alias: string, plan: StorePlan, origin: Origin): void;
  /** A hit saved `micros` (what it would have cost upstream). */
  saved(alias: string, micros: number): void;
  readonly settings: CacheSettings;
  /** Removes entries: an alias's, a key's (`scope`, e.g. `key=team`), or both; resolves with how many. */
  purge(aliases: readonly string[], scope?: string): Promise<number>;
  /** Removes the entries one request produced (exact and semantic), by its id as a hit names it; resolves with how many. */
  purgeProducedBy(requestId: string): Promise<number>;
  /** This replica's lookups by result and savings, and the entries held, per alias asked for. */
  stats(aliases: readonly string[]): Promise<AliasCacheStats[]>;
  /** The same without the entries: read from memory only, so a live feed can send it every second. */
  tallies(aliases: readonly string[]): AliasCacheTally[];
}

/** A route with its cache. */
export type CachedRoute = ModelRoute & { readonly cache: NonNullable<ModelRoute["cache"]> };

/** One alias's lookups on this replica since it started, as the console shows them. */
export interface AliasCacheTally {
  readonly alias: string;
  /** Exact and semantic together. */
  readonly hits: number;
  readonly semanticHits: number;
  readonly misses: number;
  readonly bypasses: number;
  readonly errors: number;
  /** hits / (hits + misses + errors); 0 before the first lookup. */
  readonly hitRate: number;
  readonly savedMicros: number;
}

/** One alias's cache, as GetCacheStats reports it. */
export interface AliasCacheStats extends AliasCacheTally {
  readonly entries: number;
}

export interface ResponseCacheOptions {
  /** The exact cache's entries. */
  readonly store: CacheStore;
  /** The semantic cache: its entries and how a question is embedded. Without it semantic settings are ignored. */
  readonly semantic?: { readonly store: SemanticStore; readonly embed: EmbedQuestion };
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

/**
 * Whose entries a request may read: its key's (scope `key`; anonymous
 * callers share one scope), its team's (scope `team`; a key in no team
 * keeps to its own, never to everyone's), or everyone's. Keys and teams
 * by id, never by name: a key or team created under a removed one's name
 * reads none of its entries. (Scopes of versions before ids, `key=` and
 * `team=` with a name, are read by nobody now and leave by their TTL.)
 */
export function scopeOf(route: { readonly cache: NonNullable<ModelRoute["cache"]> }, principal: Principal | undefined): string {
  if (route.cache.scope === "global") return "*global";
  if (route.cache.scope === "team" && principal?.team !== undefined && principal.teamId !== undefined) return teamScope(principal.teamId);
  return principal ? keyScope(principal.id) : "key=*anonymous";
}

/** A key's cache scope, by its id (Principal.id). */
export function keyScope(id: string): string {
  return `kid=${id}`;
}

/** A team's cache scope, by its id. */
export function teamScope(id: string): string {
  return `tid=${id}`;
}

const NONE = Symbol("timed out");
const NOT_YET_VALUE = Symbol("not yet");
/** Settled before any store call: loses a race only to a promise that was already settled too. */
const NOT_YET = Promise.resolve(NOT_YET_VALUE);

export function createResponseCache(options: ResponseCacheOptions): ResponseCache {
  const { store, settings, logger, instruments } = options;
  const now = options.now ?? Date.now;

  /** Per alias since start, for GetCacheStats (metrics carry the same counts for Prometheus). */
  const tallies = new Map<string, Record<CacheResult, number> & { savedMicros: number }>();
  const tally = (alias: string) => {
    let t = tallies.get(alias);
    if (!t) tallies.set(alias, (t = { hit_exact: 0, hit_semantic: 0, miss: 0, bypass: 0, error: 0, savedMicros: 0 }));
    return t;
  };
  const talliesOf = (aliases: readonly string[]): AliasCacheTally[] =>
    aliases.map((alias) => {
      const t = tally(alias);
      const hits = t.hit_exact + t.hit_semantic;
      const looked = hits + t.miss + t.error;
      return { alias, hits, semanticHits: t.hit_semantic, misses: t.miss, bypasses: t.bypass, errors: t.error, hitRate: looked === 0 ? 0 : hits / looked, savedMicros: t.savedMicros };
    });
  const counted = (alias: string, result: CacheResult, startedAt: number): void => {
    tally(alias)[result]++;
    instruments?.cacheLookups.add(1, { "gen_ai.request.model": alias, "sluice.cache.result": result });
    if (result !== "bypass") instruments?.cacheLookupDuration.record((performance.now() - startedAt) / 1000, { "gen_ai.request.model": alias });
  };

  /** The store's answer, or NONE once `lookupTimeoutMs` passed or it failed (the late answer is dropped). */
  const bounded = async <T>(alias: string, work: () => Promise<T>): Promise<T | typeof NONE> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      const pending = work();
      // An answer already there (the in-process store's) wins this race: no timer is armed for a lookup that cannot be late.
      const now = await Promise.race([pending, NOT_YET]);
      if (now !== NOT_YET_VALUE) return now;
      const late = new Promise<typeof NONE>((resolve) => (timer = setTimeout(resolve, settings.lookupTimeoutMs, NONE)));
      return await Promise.race([pending, late]);
    } catch (error) {
      logger.warn({ event: "cache.lookup_failed", alias, error: error instanceof Error ? error.message : String(error) });
      return NONE;
    } finally {
      clearTimeout(timer);
    }
  };

  /** The exact cache's part of a lookup: its entry, or NONE when the store failed. */
  const exactLookup = async (alias: string, key: string, secret: Buffer): Promise<CachedAnswer | undefined | typeof NONE> => {
    const text = await bounded(alias, () => store.get(key, alias));
    if (text === NONE) return NONE;
    const opened = text === undefined ? undefined : unseal(text, secret);
    return opened === undefined ? undefined : decodeAnswer(opened);
  };

  /** The semantic part: the question's vector (undefined when it could not be had) and the nearest entry past the threshold. */
  const semanticLookup = async (
    request: ChatRequest,
    route: CachedRoute,
    principal: Principal | undefined,
    scope: string,
    look: boolean,
    context: { readonly requestId: string; readonly signal: AbortSignal },
  ): Promise<{ plan?: NonNullable<StorePlan["semantic"]>; hit?: { answer: CachedAnswer; similarity: number }; failed?: boolean }> => {
    const semantic = route.cache.semantic;
    if (!semantic || !options.semantic) return {};
    const split = splitQuestion(request);
    if (!split || split.question.length > settings.maxEmbedChars) return {};
    let vector: Float32Array;
    try {
      vector = await options.semantic.embed(split.question, semantic.embeddingModel, principal, `${context.requestId}.cache`, context.signal);
    } catch (error) {
      // The embedding provider down, or the key over its limits: this request gets the exact cache only.
      logger.warn({ event: "cache.embed_failed", alias: route.alias, error: error instanceof Error ? error.message : String(error) });
      return { failed: true };
    }
    const keys = exactCacheKeys(split.context, scope);
    const plan = { place: { alias: route.alias, scope, context: keys.id }, vector, secret: keys.secret, ttlMs: semantic.ttlMs, maxEntries: semantic.maxEntries };
    if (!look) return { plan };
    const found = await bounded(route.alias, () => options.semantic!.store.nearest(plan.place, vector));
    if (found === NONE) return { plan, failed: true };
    if (!found || found.similarity < semantic.threshold) return { plan };
    const opened = unseal(found.answer, keys.secret);
    const answer = opened === undefined ? undefined : decodeAnswer(opened);
    return answer ? { plan, hit: { answer, similarity: found.similarity } } : { plan };
  };

  return {
    settings,
    async lookup(request, route, principal, policy, context) {
      const startedAt = performance.now();
      const alias = route.alias;
      const scope = scopeOf(route, principal);
      const look = policy !== "no_lookup" && policy !== "bypass";
      const keep = policy !== "no_store" && policy !== "bypass";
      const keys = route.cache.exactTtlMs === undefined ? undefined : exactCacheKeys(request, scope);
      const exact = keys ? { key: `${entryPrefix(alias, scope)}${keys.id}`, secret: keys.secret, ttlMs: route.cache.exactTtlMs! } : undefined;
      let failed = false;
      if (look && exact) {
        const found = await exactLookup(alias, exact.key, exact.secret);
        if (found !== NONE && found) {
          counted(alias, "hit_exact", startedAt);
          return { result: "hit_exact", answer: found };
        }
        failed = found === NONE;
      }
      // The question is embedded when the semantic cache may be read or written; not when neither.
      const semantic = look || keep ? await semanticLookup(request, route, principal, scope, look, context) : {};
      if (semantic.hit) {
        counted(alias, "hit_semantic", startedAt);
        return { result: "hit_semantic", answer: semantic.hit.answer, similarity: semantic.hit.similarity };
      }
      failed ||= semantic.failed === true;
      const result: CacheResult = !look ? "bypass" : failed ? "error" : "miss";
      counted(alias, result, startedAt);
      const plan: StorePlan | undefined =
        keep && (exact || semantic.plan)
          ? { capture: createAnswerCapture({ maxBytes: settings.maxEntryBytes, toolCalls: route.cache.cacheToolCalls }), ...(exact ? { exact } : {}), ...(semantic.plan ? { semantic: semantic.plan } : {}) }
          : undefined;
      return { result, ...(plan ? { store: plan } : {}) };
    },

    async purge(aliases, scope) {
      let n = 0;
      for (const alias of aliases) n += await store.purge(entryPrefix(alias, scope));
      if (options.semantic) n += await options.semantic.store.purge(aliases, scope).catch(() => 0);
      return n;
    },

    async purgeProducedBy(requestId) {
      const exact = await store.purgeProducedBy(requestId);
      return exact + (options.semantic ? await options.semantic.store.purgeProducedBy(requestId).catch(() => 0) : 0);
    },

    async stats(aliases) {
      return Promise.all(
        talliesOf(aliases).map(async (tallied) => {
          const semanticEntries = options.semantic ? await options.semantic.store.size(tallied.alias).catch(() => 0) : 0;
          return { ...tallied, entries: (await store.size(entryPrefix(tallied.alias))) + semanticEntries };
        }),
      );
    },

    tallies: talliesOf,

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
      const text = encodeAnswer(answer);
      // Bytes as a store holds them: a bound on characters let an answer in three-byte characters (or JSON escapes) through at three times its size.
      if (sealedBytes(Buffer.byteLength(text)) > settings.maxEntryBytes) {
        instruments?.cacheWrites.add(1, { "gen_ai.request.model": alias, "sluice.cache.write": "too_large" });
        return;
      }
      const written = (layer: string) => (stored: boolean | void) => {
        instruments?.cacheWrites.add(1, { "gen_ai.request.model": alias, "sluice.cache.write": stored === false ? "no_room" : "stored" });
        logger.debug({ event: stored === false ? "cache.no_room" : "cache.stored", layer, alias, requestId: origin.requestId });
      };
      const lost = (layer: string) => (error: unknown) => {
        instruments?.cacheWrites.add(1, { "gen_ai.request.model": alias, "sluice.cache.write": "failed" });
        logger.warn({ event: "cache.write_failed", layer, alias, requestId: origin.requestId, error: error instanceof Error ? error.message : String(error) });
      };
      const { exact, semantic } = plan;
      if (exact) store.set(exact.key, seal(text, exact.secret), { ttlMs: exact.ttlMs, group: alias, producedBy: origin.requestId }).then(written("exact"), lost("exact"));
      if (semantic && options.semantic) {
        options.semantic.store
          .insert(semantic.place, semantic.vector, { answer: seal(text, semantic.secret), requestId: origin.requestId, ttlMs: semantic.ttlMs, maxEntries: semantic.maxEntries })
          .then(written("semantic"), lost("semantic"));
      }
    },
  };
}
