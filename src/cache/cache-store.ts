/**
 * Where exact-cache entries live: text values under hashed keys, each with
 * a time to live, in groups (one per alias) whose bytes are bounded, as
 * are all groups' together; the least recently used entry goes first. In
 * process (memory-cache-store.ts) for one replica, or Redis
 * (redis-cache-store.ts) shared by all. Calls may fail or be slow; the
 * response cache bounds them and counts a failure as a miss.
 */
export interface CacheStore {
  /** The entry's value; a hit makes it the group's most recently used. */
  get(key: string, group: string): Promise<string | undefined>;
  /**
   * Stores an entry, first evicting the least recently used ones its group
   * and the store must lose to stay within their bounds. Resolves false when
   * it was not stored: larger than a bound, or more to evict than one write
   * may (the next writes evict the rest).
   */
  set(key: string, value: string, entry: EntryWrite): Promise<boolean>;
  /** Removes the entry a request produced (its id, as a hit's start delta names it); resolves with 0 or 1. */
  purgeProducedBy(requestId: string): Promise<number>;
  /** Removes every entry whose key starts with `prefix` (an alias's, a key's); resolves with how many. */
  purge(prefix: string): Promise<number>;
  /** Entries held now whose key starts with `prefix` (a Redis store counts every replica's). */
  size(prefix: string): Promise<number>;
}

export interface EntryWrite {
  readonly ttlMs: number;
  /** The group whose bound it counts against (the alias). */
  readonly group: string;
  /** The id of the request whose answer this is, so that `purgeProducedBy` can find the entry. */
  readonly producedBy?: string;
}

/** How much a store holds: every group's entries together, and any one group's. */
export interface CacheBounds {
  readonly maxBytes: number;
  readonly maxGroupBytes: number;
}
