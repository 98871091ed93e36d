import type { CacheStore } from "./cache-store.js";

interface Entry {
  readonly value: string;
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
  const now = options.now ?? Date.now;
  let bytes = 0;
  const remove = (key: string, entry: Entry) => {
    entries.delete(key);
    bytes -= entry.bytes;
  };
  return {
    get(key) {
      const entry = entries.get(key);
      if (!entry) return Promise.resolve(undefined);
      remove(key, entry);
      if (entry.expiresAt <= now()) return Promise.resolve(undefined);
      entries.set(key, entry);
      bytes += entry.bytes;
      return Promise.resolve(entry.value);
    },
    set(key, value, ttlMs) {
      const size = key.length + value.length * 2;
      const old = entries.get(key);
      if (old) remove(key, old);
      if (size > options.maxBytes) return Promise.resolve();
      for (const [oldest, entry] of entries) {
        if (bytes + size <= options.maxBytes) break;
        remove(oldest, entry);
      }
      entries.set(key, { value, bytes: size, expiresAt: now() + ttlMs });
      bytes += size;
      return Promise.resolve();
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
