import type { CacheStore } from "./cache-store.js";

interface Entry {
  readonly value: string;
  readonly producedBy: string | undefined;
  readonly bytes: number;
  readonly expiresAt: number;
}

/**
 * Exact-cache entries in this process, bounded by bytes: least recently
 * used first out when a new entry would pass `maxBytes` (a Map keeps
 * insertion order; a hit moves its entry to the end). Expired entries are
 * dropped when met. `now` is injectable so tests move time instead of waiting.
 */
export function createMemoryCacheStore(options: { readonly maxBytes: number; readonly now?: () => number }): CacheStore {
  const entries = new Map<string, Entry>();
  /** Entry key by the request that produced it. */
  const byProducer = new Map<string, string>();
  const now = options.now ?? Date.now;
  let bytes = 0;
  const remove = (key: string, entry: Entry) => {
    entries.delete(key);
    bytes -= entry.bytes;
    if (entry.producedBy !== undefined && byProducer.get(entry.producedBy) === key) byProducer.delete(entry.producedBy);
  };
  return {
    get(key) {
      const entry = entries.get(key);
      if (!entry) return Promise.resolve(undefined);
      if (entry.expiresAt <= now()) {
        remove(key, entry);
        return Promise.resolve(undefined);
      }
      // Last in the Map's order: the most recently used.
      entries.delete(key);
      entries.set(key, entry);
      return Promise.resolve(entry.value);
    },
    set(key, value, ttlMs, producedBy) {
      const size = key.length + value.length * 2 + (producedBy === undefined ? 0 : key.length + producedBy.length * 2);
      const old = entries.get(key);
      if (old) remove(key, old);
      if (size > options.maxBytes) return Promise.resolve();
      for (const [oldest, entry] of entries) {
        if (bytes + size <= options.maxBytes) break;
        remove(oldest, entry);
      }
      entries.set(key, { value, producedBy, bytes: size, expiresAt: now() + ttlMs });
      bytes += size;
      if (producedBy !== undefined) byProducer.set(producedBy, key);
      return Promise.resolve();
    },
    purgeProducedBy(requestId) {
      const key = byProducer.get(requestId);
      const entry = key === undefined ? undefined : entries.get(key);
      if (key === undefined || !entry) return Promise.resolve(0);
      remove(key, entry);
      return Promise.resolve(entry.expiresAt <= now() ? 0 : 1);
    },
    purge(prefix) {
      let n = 0;
      for (const [key, entry] of entries) {
        if (!key.startsWith(prefix)) continue;
        remove(key, entry);
        n++;
      }
      return Promise.resolve(n);
    },
    size(prefix) {
      let n = 0;
      for (const key of entries.keys()) if (key.startsWith(prefix)) n++;
      return Promise.resolve(n);
    },
  };
}
