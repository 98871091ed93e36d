import type { SluiceRedisClient } from "../store/redis-tenant-store.js";
import { within } from "../store/within.js";
import type { CacheStore } from "./cache-store.js";

/** Keys examined per SCAN step of a purge or a count: each step is one short Redis call. */
const SCAN_COUNT = 500;

/**
 * Exact-cache entries in the shared Redis, so that every replica answers
 * from one cache: a string per entry under `{prefix}cache:{key}`, expired
 * by Redis (`PX`). Every call is bounded by `timeoutMs`; the response cache
 * turns a failure into a miss (lookups) or a counted loss (writes).
 */
export function createRedisCacheStore(options: { readonly client: SluiceRedisClient; readonly prefix: string; readonly timeoutMs: number }): CacheStore {
  const { client, timeoutMs } = options;
  const keyOf = (key: string) => `${options.prefix}cache:${key}`;
  /** Beside an entry, for as long as it lives: the entry's key under the id of the request that produced it. */
  const producerKeyOf = (requestId: string) => `${options.prefix}cache-by:${requestId}`;

  /** Every stored key under `match`, a step at a time; `each` sees each step's keys. */
  async function scan(match: string, each: (keys: string[]) => Promise<void>): Promise<void> {
    let cursor = "0";
    do {
      const reply = await within(client.scan(cursor, { MATCH: match, COUNT: SCAN_COUNT }), timeoutMs, "cache scan");
      cursor = String(reply.cursor);
      if (reply.keys.length > 0) await each(reply.keys);
    } while (cursor !== "0");
  }

  return {
    async get(key) {
      const value = await within(client.get(keyOf(key)), timeoutMs, "cache get");
      return typeof value === "string" ? value : undefined;
    },
    async set(key, value, ttlMs, producedBy) {
      const px = Math.max(1, Math.round(ttlMs));
      if (producedBy === undefined) {
        await within(client.set(keyOf(key), value, { PX: px }), timeoutMs, "cache set");
        return;
      }
      await within(client.multi().set(keyOf(key), value, { PX: px }).set(producerKeyOf(producedBy), key, { PX: px }).exec(), timeoutMs, "cache set");
    },
    async purgeProducedBy(requestId) {
      const key = await within(client.get(producerKeyOf(requestId)), timeoutMs, "cache purge");
      if (typeof key !== "string") return 0;
      const [removed] = await within(client.multi().unlink(keyOf(key)).unlink(producerKeyOf(requestId)).exec(), timeoutMs, "cache purge");
      return Number(removed);
    },
    async purge(prefix) {
      let n = 0;
      await scan(`${keyOf(prefix)}*`, async (keys) => {
        n += await within(client.unlink(keys), timeoutMs, "cache purge");
      });
      return n;
    },
    async size(prefix) {
      let n = 0;
      await scan(`${keyOf(prefix)}*`, async (keys) => {
        n += keys.length;
      });
      return n;
    },
  };
}
