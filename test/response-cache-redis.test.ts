import { PassThrough } from "node:stream";
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import type { CacheStore } from "../src/cache/cache-store.js";
import { createRedisCacheStore } from "../src/cache/redis-cache-store.js";
import { createResponseCache } from "../src/cache/response-cache.js";
import type { ModelRoute } from "../src/config/config.js";
import type { ChatRequest } from "../src/core/chat-request.js";
import { createLogger } from "../src/logging/logger.js";
import { simulatedText } from "../src/simulator/text.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { scrape } from "./helpers/prometheus.js";
import { dropPrefix, inspector, keysUnder, SHARED_REDIS_URL, startOwnRedis, storeClient, testPrefix } from "./helpers/redis.js";

const prefixes: string[] = [];
const harnesses: Harness[] = [];
afterAll(async () => {
  for (const h of harnesses.splice(0)) await h.close();
  for (const prefix of prefixes) await dropPrefix(prefix);
});

/** A lookup deadline no healthy lookup reaches on a loaded machine: only a frozen Redis passes it. */
const LOOKUP_TIMEOUT_MS = 2_000;

async function replica(url: string, prefix: string): Promise<Harness> {
  const h = await startHarness({
    cache: { lookupTimeoutMs: LOOKUP_TIMEOUT_MS },
    routing: (sim) => ({
      providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: { cached: { provider: "sim", model: "sim-1?tokens=5&seed=8", cache: { exact: { ttlS: 30 } } } },
    }),
    // Redis calls get as long as lookups: a loaded CI machine took more than the default 250 ms to store the entry the frozen-Redis test starts from.
    store: { redis: { url, prefix, timeoutMs: LOOKUP_TIMEOUT_MS } },
  });
  harnesses.push(h);
  return h;
}

async function ask(h: Harness, content: string) {
  const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const { data, response } = await client.chat.completions.create({ model: "cached", messages: [{ role: "user", content }] }).withResponse();
  return { text: data.choices[0]!.message.content, cache: response.headers.get("sluice-cache"), requestId: response.headers.get("x-request-id")! };
}

describe("the exact cache on Redis", () => {
  it("is shared by replicas: an answer one replica stored is a hit on the other, and expires in Redis", async () => {
    const prefix = testPrefix("cache");
    prefixes.push(prefix);
    const [a, b] = [await replica(SHARED_REDIS_URL, prefix), await replica(SHARED_REDIS_URL, prefix)];
    const first = await ask(a!, "Shared between replicas?");
    expect(first.cache).toBe("miss");
    await a!.waitForLog((l) => l.event === "cache.stored" && l.requestId === first.requestId);
    const second = await ask(b!, "Shared between replicas?");
    expect(second).toMatchObject({ cache: "hit-exact", text: simulatedText(8, 5) });
    expect(b!.sim.records.all()).toHaveLength(0);

    const redis = await inspector();
    try {
      const keys = await keysUnder(redis, `${prefix}cache:`);
      expect(keys).toHaveLength(1);
      const ttl = await redis.pTTL(keys[0]!);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(30_000);
      // The entry is sealed with a key only the same request yields: neither the prompt nor the answer is readable in Redis.
      const value = (await redis.get(keys[0]!))!;
      expect(value).not.toContain("Shared between replicas");
      expect(value).not.toContain(simulatedText(8, 5));
      expect(Buffer.from(value, "base64").toString("utf8")).not.toContain(simulatedText(8, 5));
    } finally {
      redis.destroy();
    }
  });

  it("finds an entry by the request that produced it, for as long as the entry lives, and removes both keys", async () => {
    const prefix = testPrefix("cache-by");
    prefixes.push(prefix);
    const client = await storeClient();
    const redis = await inspector();
    try {
      const store = createRedisCacheStore({ client, prefix, timeoutMs: 5_000, maxBytes: 1 << 20, maxGroupBytes: 1 << 20 });
      await store.set("exact:a:k1", "sealed-1", { ttlMs: 30_000, group: "a", producedBy: "req_one" });
      await store.set("exact:a:k2", "sealed-2", { ttlMs: 30_000, group: "a", producedBy: "req_two" });
      const index = `${prefix}cache-by:req_one`;
      expect(await redis.get(index)).toBe("exact:a:k1");
      expect(await redis.pTTL(index)).toBeGreaterThan(0);
      expect(await store.purgeProducedBy("req_one")).toBe(1);
      expect(await store.get("exact:a:k1", "a")).toBeUndefined();
      expect(await redis.exists(index)).toBe(0);
      expect(await store.purgeProducedBy("req_one")).toBe(0);
      expect(await store.get("exact:a:k2", "a")).toBe("sealed-2");
      // An entry purged by alias leaves its index to expire: it then names nothing, and removes nothing.
      await store.purge("exact:a:");
      expect(await store.purgeProducedBy("req_two")).toBe(0);
    } finally {
      redis.destroy();
      client.disconnect();
    }
  });

  it("a Redis that stops answering makes lookups misses within the lookup deadline, never failures", async () => {
    const own = await startOwnRedis();
    try {
      const h = await replica(own.url, testPrefix("cache-frozen"));
      const errors = async () => {
        const metrics = await scrape(`${h.url}/metrics`);
        const family = metrics.families.find((f) => f.name === "sluice_cache_lookups_total");
        return Number(family?.metrics.find((m) => m.labels?.sluice_cache_result === "error")?.value ?? 0);
      };
      const first = await ask(h, "Before the freeze");
      const written = await h.waitForLog((l) => typeof l.event === "string" && l.event.startsWith("cache.") && l.requestId === first.requestId);
      expect(written, JSON.stringify(written)).toMatchObject({ event: "cache.stored" });
      expect((await ask(h, "Before the freeze")).cache).toBe("hit-exact");
      const before = await errors();
      own.freeze();
      const during = await ask(h, "Before the freeze");
      expect(during).toMatchObject({ cache: "miss", text: simulatedText(8, 5) });
      expect(await errors()).toBe(before + 1);
      own.thaw();
    } finally {
      own.thaw();
      await own.kill();
    }
  });
});

describe("the exact cache's bounds in Redis", () => {
  const ttl = (group: string) => ({ ttlMs: 60_000, group });

  /** What Redis really holds under the prefix: each entry's value length, by the entry's suffix. */
  async function held(prefix: string): Promise<Map<string, number>> {
    const redis = await inspector();
    try {
      const out = new Map<string, number>();
      for (const key of await keysUnder(redis, `${prefix}cache:`)) out.set(key.slice(`${prefix}cache:`.length), await redis.strLen(key));
      return out;
    } finally {
      redis.destroy();
    }
  }

  it("keeps each alias's entries, and all of them, within their bytes across replicas, evicting the least recently used first", async () => {
    const prefix = testPrefix("cache-bound");
    prefixes.push(prefix);
    const clients = [await storeClient(), await storeClient()];
    try {
      // An entry below counts 901 bytes of value and 4 × its Redis key (48 bytes): 1,093. A group holds 4, the store 10.
      const bounds = { maxBytes: 12_000, maxGroupBytes: 5_000 };
      const [a, b] = clients.map((client) => createRedisCacheStore({ client, prefix, timeoutMs: 5_000, ...bounds })) as [CacheStore, CacheStore];
      const value = (name: string) => name.padEnd(901, ".");
      for (let i = 0; i < 10; i++) {
        // x0 is read before every later write, on the other replica: it stays the group's most recently used but one.
        if (i > 0) expect(await (i % 2 ? a : b).get("exact:x:0", "x")).toBe(value("x0"));
        expect(await (i % 2 ? b : a).set(`exact:x:${i}`, value(`x${i}`), ttl("x"))).toBe(true);
      }
      expect([...(await held(prefix)).keys()].sort()).toEqual(["exact:x:0", "exact:x:7", "exact:x:8", "exact:x:9"]);

      for (const group of ["y", "z"]) for (let i = 0; i < 4; i++) expect(await (i % 2 ? a : b).set(`exact:${group}:${i}`, value(`${group}${i}`), ttl(group))).toBe(true);
      // The store's bound: z2 and z3 evicted the two least recently used entries of any alias, x7 and x8; x0 was read since.
      const after = await held(prefix);
      expect([...after.keys()].sort()).toEqual(["exact:x:0", "exact:x:9", ...[0, 1, 2, 3].map((i) => `exact:y:${i}`), ...[0, 1, 2, 3].map((i) => `exact:z:${i}`)]);
      expect([...after.values()].reduce((sum, n) => sum + n, 0)).toBeLessThanOrEqual(bounds.maxBytes);

      // An entry larger than its alias's bound is refused, and evicts nothing for it.
      expect(await a.set("exact:y:big", "b".repeat(6_000), ttl("y"))).toBe(false);
      expect(await b.get("exact:y:0", "y")).toBe(value("y0"));

      // Purges keep the counts true: once x is purged, its bytes are free for the others.
      expect(await a.purge("exact:x:")).toBe(2);
      const redis = await inspector();
      try {
        const counted = await redis.hGetAll(`${prefix}cache-bytes`);
        expect(counted[Buffer.from("x").toString("base64url")]).toBeUndefined();
        expect(Number(counted["*"])).toBe(8 * 1_093);
      } finally {
        redis.destroy();
      }
    } finally {
      for (const client of clients) client.disconnect();
    }
  });

  it("forgets an entry Redis expired when a lookup misses it, so its bytes do not hold room forever", async () => {
    const prefix = testPrefix("cache-expired");
    prefixes.push(prefix);
    const client = await storeClient();
    const redis = await inspector();
    try {
      const store = createRedisCacheStore({ client, prefix, timeoutMs: 5_000, maxBytes: 1 << 20, maxGroupBytes: 1 << 20 });
      await store.set("exact:x:short", "s".repeat(100), { ttlMs: 20, group: "x" });
      expect(Number(await redis.hGet(`${prefix}cache-bytes`, "*"))).toBeGreaterThan(100);
      // Redis's own expiry, not a timer of ours: wait until the key is gone.
      await expect.poll(() => redis.exists(`${prefix}cache:exact:x:short`), { timeout: 5_000, interval: 10 }).toBe(0);
      expect(await store.get("exact:x:short", "x")).toBeUndefined();
      expect(await redis.hGetAll(`${prefix}cache-bytes`)).toEqual({ "*": "0" });
      expect(await redis.zCard(`${prefix}cache-lru`)).toBe(0);
    } finally {
      redis.destroy();
      client.disconnect();
    }
  });

  it("measures an entry in bytes as stored, not in characters: multi-byte text and JSON escapes do not pass maxEntryBytes", async () => {
    const prefix = testPrefix("cache-entry-bytes");
    prefixes.push(prefix);
    const client = await storeClient();
    try {
      const store = createRedisCacheStore({ client, prefix, timeoutMs: 5_000, maxBytes: 1 << 20, maxGroupBytes: 1 << 20 });
      const settings = { lookupTimeoutMs: 2_000, chargeHits: false, maxEntryBytes: 4_096, maxMemoryBytes: 1 << 20, redisMaxBytes: 1 << 20, aliasMaxBytes: 1 << 20, maxEmbedChars: 8192 };
      const cache = createResponseCache({ store, settings, logger: createLogger("silent", new PassThrough()) });
      const route = {
        alias: "cached",
        targets: [],
        strategy: "priority",
        retry: { maxAttempts: 1, baseBackoffMs: 0, maxBackoffMs: 0 },
        dropUnsupportedParams: false,
        cache: { exactTtlMs: 60_000, scope: "key", cacheToolCalls: false },
      } as const satisfies ModelRoute;
      const request = (text: string): ChatRequest => ({ model: "cached", messages: [{ role: "user", content: [{ type: "text", text }] }], tools: [], sampling: { stop: [] }, metadata: { labels: {} } });
      const call = { requestId: "r", signal: new AbortController().signal };
      const answer = async (question: string, text: string) => {
        const miss = await cache.lookup(request(question), route, undefined, "default", call);
        miss.store!.capture.observe({ type: "text", text });
        miss.store!.capture.observe({ type: "usage", inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, reasoningTokens: 0 });
        miss.store!.capture.observe({ type: "finish", reason: "stop" });
        cache.offer("cached", miss.store!, { requestId: question, target: "sim/m", provider: "sim", model: "m" });
      };
      // 2,000 characters each, under a bound of 4,096: 6,000 bytes of UTF-8; 2,000 control characters are 12,000 bytes of JSON.
      await answer("wide", "日".repeat(2_000));
      await answer("escaped", "\u0001".repeat(2_000));
      await answer("small", "fits");
      await expect.poll(async () => (await cache.lookup(request("small"), route, undefined, "default", call)).result, { timeout: 5_000, interval: 10 }).toBe("hit_exact");
      const entries = await held(prefix);
      expect(entries.size).toBe(1);
      for (const length of entries.values()) expect(length).toBeLessThanOrEqual(settings.maxEntryBytes);
      expect((await cache.lookup(request("wide"), route, undefined, "default", call)).result).toBe("miss");
      expect((await cache.lookup(request("escaped"), route, undefined, "default", call)).result).toBe("miss");
    } finally {
      client.disconnect();
    }
  });
});
