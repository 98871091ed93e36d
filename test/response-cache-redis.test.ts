import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { simulatedText } from "../src/simulator/text.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { scrape } from "./helpers/prometheus.js";
import { createRedisCacheStore } from "../src/cache/redis-cache-store.js";
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
    store: { redis: { url, prefix } },
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
      const store = createRedisCacheStore({ client, prefix, timeoutMs: 5_000 });
      await store.set("exact:a:k1", "sealed-1", 30_000, "req_one");
      await store.set("exact:a:k2", "sealed-2", 30_000, "req_two");
      const index = `${prefix}cache-by:req_one`;
      expect(await redis.get(index)).toBe("exact:a:k1");
      expect(await redis.pTTL(index)).toBeGreaterThan(0);
      expect(await store.purgeProducedBy("req_one")).toBe(1);
      expect(await store.get("exact:a:k1")).toBeUndefined();
      expect(await redis.exists(index)).toBe(0);
      expect(await store.purgeProducedBy("req_one")).toBe(0);
      expect(await store.get("exact:a:k2")).toBe("sealed-2");
      // An entry purged by alias leaves its index to expire: it then names nothing, and removes nothing.
      await store.purge("exact:a:");
      expect(await store.purgeProducedBy("req_two")).toBe(0);
    } finally {
      redis.destroy();
      client.destroy();
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
      await h.waitForLog((l) => l.event === "cache.stored" && l.requestId === first.requestId);
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
