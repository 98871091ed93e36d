import type { SluiceRedisClient } from "../store/redis-connection.js";
import { redisScript } from "../store/redis-script.js";
import { within } from "../store/within.js";
import type { CacheBounds, CacheStore } from "./cache-store.js";
import { CACHE_EVICT_SCRIPT, CACHE_GET_SCRIPT, CACHE_SET_SCRIPT } from "./redis-cache-scripts.js";

/** Keys examined per SCAN step of a purge or a count: each step is one short Redis call. */
const SCAN_COUNT = 500;

/**
 * Entries one write may evict to make room for itself: each is a few Redis
 * commands inside one script, and Redis serves nothing else meanwhile.
 * A write that needs more is not stored; the next writes evict the rest.
 */
export const MAX_EVICTIONS_PER_WRITE = 256;

const setScript = redisScript(CACHE_SET_SCRIPT);
const getScript = redisScript(CACHE_GET_SCRIPT);
const evictScript = redisScript(CACHE_EVICT_SCRIPT);

/**
 * Exact-cache entries in the shared Redis, so that every replica answers
 * from one cache: a string per entry under `{prefix}cache:{key}`, expired
 * by Redis (`PX`), and bounded in bytes per group (alias) and in all, the
 * least recently used evicted first (redis-cache-scripts.ts). Every call
 * is bounded by `timeoutMs`; the response cache turns a failure into a
 * miss (lookups) or a counted loss (writes).
 */
export function createRedisCacheStore(options: CacheBounds & { readonly client: SluiceRedisClient; readonly prefix: string; readonly timeoutMs: number }): CacheStore {
  const { client, timeoutMs, prefix } = options;
  const keyOf = (key: string) => `${prefix}cache:${key}`;
  /** Beside an entry, for as long as it lives: the entry's key under the id of the request that produced it. */
  const producerKeyOf = (requestId: string) => `${prefix}cache-by:${requestId}`;
  const groupOf = (group: string) => Buffer.from(group).toString("base64url");
  /** The keys every script starts with: the store's order, the entries' sizes, the byte counters. */
  const indexKeys = [`${prefix}cache-lru`, `${prefix}cache-meta`, `${prefix}cache-bytes`];
  const groupOrders = `${prefix}cache-lru:`;

  /** Every stored key under `match`, a step at a time; `each` sees each step's keys. */
  async function scan(match: string, each: (keys: string[]) => Promise<void>): Promise<void> {
    let cursor = "0";
    do {
      const [next, keys] = await within(client.scan(cursor, "MATCH", match, "COUNT", SCAN_COUNT), timeoutMs, "cache scan");
      cursor = next;
      if (keys.length > 0) await each(keys);
    } while (cursor !== "0");
  }
  const evict = async (keys: string[]) => Number(await within(evictScript(client, [...indexKeys, ...keys], [groupOrders]), timeoutMs, "cache purge"));

  return {
    async get(key, group) {
      const value = await within(getScript(client, [...indexKeys, keyOf(key)], [groupOrders, groupOf(group)]), timeoutMs, "cache get");
      return typeof value === "string" ? value : undefined;
    },
    async set(key, value, { ttlMs, group, producedBy }) {
      const px = Math.max(1, Math.round(ttlMs));
      const entry = keyOf(key);
      const producer = producedBy === undefined ? "" : producerKeyOf(producedBy);
      // What Redis holds for it: the value and its keys (the entry's, in two orders and the sizes; the producer index).
      const size = Buffer.byteLength(value) + 4 * Buffer.byteLength(entry) + (producer === "" ? 0 : Buffer.byteLength(producer) + Buffer.byteLength(key));
      const stored = await within(
        setScript(client, [...indexKeys, entry], [groupOrders, groupOf(group), value, String(px), String(size), String(options.maxBytes), String(options.maxGroupBytes), String(MAX_EVICTIONS_PER_WRITE), producer, key]),
        timeoutMs,
        "cache set",
      );
      return Number(stored) === 1;
    },
    async purgeProducedBy(requestId) {
      const key = await within(client.get(producerKeyOf(requestId)), timeoutMs, "cache purge");
      if (typeof key !== "string") return 0;
      const removed = await evict([keyOf(key)]);
      await within(client.unlink(producerKeyOf(requestId)), timeoutMs, "cache purge");
      return removed;
    },
    async purge(keyPrefix) {
      let n = 0;
      await scan(`${keyOf(keyPrefix)}*`, async (keys) => {
        n += await evict(keys);
      });
      return n;
    },
    async size(keyPrefix) {
      let n = 0;
      await scan(`${keyOf(keyPrefix)}*`, async (keys) => {
        n += keys.length;
      });
      return n;
    },
  };
}
