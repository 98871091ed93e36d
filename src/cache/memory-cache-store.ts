import type { CacheBounds, CacheStore } from "./cache-store.js";

interface Entry {
  readonly value: string;
  readonly group: string;
  readonly producedBy: string | undefined;
  readonly bytes: number;
  readonly expiresAt: number;
}

/** Entries in least-recently-used order (a Map keeps insertion order; a hit moves its entry to the end), and their bytes. */
interface Lru {
  readonly entries: Map<string, Entry>;
  bytes: number;
}

/**
 * Exact-cache entries in this process, bounded by bytes: least recently
 * used first out when a new entry would pass `maxBytes`, or its group's
 * `maxGroupBytes`. Expired entries are dropped when met. `now` is
 * injectable so tests move time instead of waiting.
 */
export function createMemoryCacheStore(options: CacheBounds & { readonly now?: () => number }): CacheStore {
  const all: Lru = { entries: new Map(), bytes: 0 };
  const groups = new Map<string, Lru>();
  /** Entry key by the request that produced it. */
  const byProducer = new Map<string, string>();
  const now = options.now ?? Date.now;
  const groupOf = (name: string) => {
    let lru = groups.get(name);
    if (!lru) groups.set(name, (lru = { entries: new Map(), bytes: 0 }));
    return lru;
  };
  const remove = (key: string, entry: Entry) => {
    all.entries.delete(key);
    all.bytes -= entry.bytes;
    const group = groups.get(entry.group)!;
    group.entries.delete(key);
    group.bytes -= entry.bytes;
    if (group.entries.size === 0) groups.delete(entry.group);
    if (entry.producedBy !== undefined && byProducer.get(entry.producedBy) === key) byProducer.delete(entry.producedBy);
  };
  /** Evicts `lru`'s least recently used entries until `size` more bytes fit under `max`. */
  const makeRoom = (lru: Lru, size: number, max: number) => {
    for (const [oldest, entry] of lru.entries) {
      if (lru.bytes + size <= max) break;
      remove(oldest, entry);
    }
  };
  return {
    get(key) {
      const entry = all.entries.get(key);
      if (!entry) return Promise.resolve(undefined);
      if (entry.expiresAt <= now()) {
        remove(key, entry);
        return Promise.resolve(undefined);
      }
      // Last in both orders: the most recently used.
      const group = groups.get(entry.group)!;
      all.entries.delete(key);
      all.entries.set(key, entry);
      group.entries.delete(key);
      group.entries.set(key, entry);
      return Promise.resolve(entry.value);
    },
    set(key, value, { ttlMs, group: name, producedBy }) {
      const size = key.length + value.length * 2 + (producedBy === undefined ? 0 : key.length + producedBy.length * 2);
      const old = all.entries.get(key);
      if (old) remove(key, old);
      if (size > options.maxBytes || size > options.maxGroupBytes) return Promise.resolve(false);
      makeRoom(groupOf(name), size, options.maxGroupBytes);
      makeRoom(all, size, options.maxBytes);
      const entry: Entry = { value, group: name, producedBy, bytes: size, expiresAt: now() + ttlMs };
      const group = groupOf(name);
      all.entries.set(key, entry);
      all.bytes += size;
      group.entries.set(key, entry);
      group.bytes += size;
      if (producedBy !== undefined) byProducer.set(producedBy, key);
      return Promise.resolve(true);
    },
    purgeProducedBy(requestId) {
      const key = byProducer.get(requestId);
      const entry = key === undefined ? undefined : all.entries.get(key);
      if (key === undefined || !entry) return Promise.resolve(0);
      remove(key, entry);
      return Promise.resolve(entry.expiresAt <= now() ? 0 : 1);
    },
    purge(prefix) {
      let n = 0;
      for (const [key, entry] of all.entries) {
        if (!key.startsWith(prefix)) continue;
        remove(key, entry);
        n++;
      }
      return Promise.resolve(n);
    },
    size(prefix) {
      let n = 0;
      for (const key of all.entries.keys()) if (key.startsWith(prefix)) n++;
      return Promise.resolve(n);
    },
  };
}
