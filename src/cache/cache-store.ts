/**
 * Where exact-cache entries live: text values under hashed keys, each with
 * a time to live. In process (memory-cache-store.ts) for one replica, or
 * Redis (redis-cache-store.ts) shared by all. Calls may fail or be slow;
 * the response cache bounds them and counts a failure as a miss.
 */
export interface CacheStore {
  get(key: string): Promise<string | undefined>;
  /** `producedBy`: the id of the request whose answer this is, so that `purgeProducedBy` can find the entry. */
  set(key: string, value: string, ttlMs: number, producedBy?: string): Promise<void>;
  /** Removes the entry a request produced (its id, as a hit's start delta names it); resolves with 0 or 1. */
  purgeProducedBy(requestId: string): Promise<number>;
  /** Removes every entry whose key starts with `prefix` (an alias's, a key's); resolves with how many. */
  purge(prefix: string): Promise<number>;
  /** Entries held now whose key starts with `prefix` (a Redis store counts every replica's). */
  size(prefix: string): Promise<number>;
}
