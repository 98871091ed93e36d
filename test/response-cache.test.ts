import { Code, ConnectError } from "@connectrpc/connect";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CachePolicy } from "../gen/sluice/v1/chat_service_pb.js";
import { CacheHit } from "../gen/sluice/v1/delta_pb.js";
import { simulatedText } from "../src/simulator/text.js";
import { adminClient } from "./helpers/admin.js";
import { chatClient, collect, textOf, transports, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { scrape } from "./helpers/prometheus.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

const KEYS = { a: "sk-test-cache-a-4f6b8d0a2c1e3957", b: "sk-test-cache-b-9e7c5a3b1d0f2468", c: "sk-test-cache-c-2d4f6a8c0e1b3957", d: "sk-test-cache-d-7b9d1f3a5c2e4068" };
const ADMIN_KEY = "sk-test-cache-admin-1b3d5f7a9c0e2468";
/** One dollar per million input tokens and two per million output: 1 and 2 micro-dollars per token. */
const PRICE = { inputPerMTok: 1, outputPerMTok: 2 };

const events = tenancyEvents();
let h: Harness;
let runs = 0;
/** A prompt no other test uses, tagged so the simulator's records count its upstream requests. */
const fresh = (label: string) => `#sim tag=${label}-${++runs}\nWhat is the capital of France?`;
const upstreamCalls = (text: string) => h.sim.records.all().filter((r) => r.tag === /tag=(\S+)/.exec(text)![1]).length;
const stored = (requestId: string) => h.waitForLog((l) => l.event === "cache.stored" && l.requestId === requestId);

beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: {
        cached: { provider: "sim", model: "sim-1?tokens=6&seed=3", price: PRICE, cache: { exact: { ttlS: 60 } } },
        shared: { provider: "sim", model: "sim-1?tokens=6&seed=3", cache: { exact: { ttlS: 60 }, scope: "global" } },
        crew: { provider: "sim", model: "sim-1?tokens=6&seed=3", cache: { exact: { ttlS: 60 }, scope: "team" } },
        tools: { provider: "sim", model: "sim-1?tokens=2&tools=1", cache: { exact: { ttlS: 60 } } },
        toolsCached: { provider: "sim", model: "sim-1?tokens=2&tools=2", cache: { exact: { ttlS: 60 }, cacheToolCalls: true } },
        plain: { provider: "sim", model: "sim-1?tokens=6&seed=3" },
      },
    }),
    env: { A_KEY: KEYS.a, B_KEY: KEYS.b, C_KEY: KEYS.c, D_KEY: KEYS.d, ADMIN_KEY },
    auth: {
      adminKeyEnv: "ADMIN_KEY",
      keys: [
        { name: "a", keyEnv: "A_KEY" },
        { name: "b", keyEnv: "B_KEY" },
        { name: "c", keyEnv: "C_KEY", team: "red" },
        { name: "d", keyEnv: "D_KEY", team: "red" },
      ],
      teams: [{ name: "red" }],
    },
    observer: events.observer,
  });
});
afterAll(() => h.close());

const sdk = (key: string) => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: key, maxRetries: 0 });

async function completion(key: string, model: string, content: string, headers: Record<string, string> = {}) {
  const { data, response } = await sdk(key)
    .chat.completions.create({ model, messages: [{ role: "user", content }] }, { headers })
    .withResponse();
  return { text: data.choices[0]!.message.content, cache: response.headers.get("sluice-cache"), requestId: response.headers.get("x-request-id")! };
}

describe("the exact cache", () => {
  it("answers a repeated request from the cache: same text, no upstream call, sluice-cache says so", async () => {
    const prompt = fresh("repeat");
    const first = await completion(KEYS.a, "cached", prompt);
    expect(first).toMatchObject({ text: simulatedText(3, 6), cache: "miss" });
    await stored(first.requestId);
    const second = await completion(KEYS.a, "cached", prompt);
    expect(second).toMatchObject({ text: simulatedText(3, 6), cache: "hit-exact" });
    expect(upstreamCalls(prompt)).toBe(1);
  });

  it("keys on the request, not the edge: a gRPC stream's answer serves the Chat Completions facade, and a hit's start names the request that produced it", async () => {
    const prompt = fresh("edges");
    const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    let firstHeaders: Headers | undefined;
    const first = await collect(client.streamChat(userRequest("cached", prompt), { headers: { authorization: `Bearer ${KEYS.a}`, "x-request-id": "cache-origin-1" }, onHeader: (h) => (firstHeaders = h) }));
    expect(firstHeaders?.get("sluice-cache")).toBe("miss");
    expect(first[0]!.delta).toMatchObject({ case: "start", value: { cache: CacheHit.UNSPECIFIED } });
    await stored("cache-origin-1");

    expect(await completion(KEYS.a, "cached", prompt)).toMatchObject({ text: textOf(first), cache: "hit-exact" });
    let hitHeaders: Headers | undefined;
    const hit = await collect(client.streamChat(userRequest("cached", prompt), { headers: { authorization: `Bearer ${KEYS.a}` }, onHeader: (h) => (hitHeaders = h) }));
    expect(hitHeaders?.get("sluice-cache")).toBe("hit-exact");
    expect(hit[0]!.delta).toMatchObject({ case: "start", value: { cache: CacheHit.EXACT, cacheRequestId: "cache-origin-1", provider: "sim", model: "sim-1?tokens=6&seed=3" } });
    expect(textOf(hit)).toBe(textOf(first));
    expect(hit.at(-1)!.delta.case).toBe("finish");
    expect(upstreamCalls(prompt)).toBe(1);
  });

  it("a hit costs nothing by default; its usage record carries the original usage, the cache and the cost saved", async () => {
    const prompt = fresh("cost");
    const first = await completion(KEYS.a, "cached", prompt);
    const paid = await events.recorded(first.requestId);
    expect(paid.costMicros).toBeGreaterThan(0);
    await stored(first.requestId);
    const hit = await completion(KEYS.a, "cached", prompt);
    expect(hit.cache).toBe("hit-exact");
    const record = await events.recorded(hit.requestId);
    expect(record).toMatchObject({ cache: "exact", costMicros: 0, savedMicros: paid.costMicros, inputTokens: paid.inputTokens, outputTokens: paid.outputTokens, outcome: "completed" });
  });

  it("never crosses keys with scope key; scope global shares an entry between keys", async () => {
    const prompt = fresh("scope");
    const a = await completion(KEYS.a, "cached", prompt);
    await stored(a.requestId);
    expect((await completion(KEYS.b, "cached", prompt)).cache).toBe("miss");
    expect((await completion(KEYS.a, "cached", prompt)).cache).toBe("hit-exact");

    const global = fresh("global");
    const first = await completion(KEYS.a, "shared", global);
    await stored(first.requestId);
    expect((await completion(KEYS.b, "shared", global)).cache).toBe("hit-exact");
  });

  it("with scope team shares an entry between the keys of one team, and with no one outside it", async () => {
    const prompt = fresh("team");
    const c = await completion(KEYS.c, "crew", prompt);
    expect(c.cache).toBe("miss");
    await stored(c.requestId);
    expect((await completion(KEYS.d, "crew", prompt)).cache).toBe("hit-exact");
    // Key a is in no team: it keeps to its own entries, and does not read the team's.
    const outside = await completion(KEYS.a, "crew", prompt);
    expect(outside.cache).toBe("miss");
    await stored(outside.requestId);
    expect((await completion(KEYS.a, "crew", prompt)).cache).toBe("hit-exact");
    expect((await completion(KEYS.b, "crew", prompt)).cache).toBe("miss");
    expect(upstreamCalls(prompt)).toBe(3);
  });

  it("follows the caller: no-cache skips the lookup and stores, no-store neither looks up nor stores, gRPC cache_policy likewise", async () => {
    const prompt = fresh("control");
    const bypass = await completion(KEYS.a, "cached", prompt, { "cache-control": "no-store" });
    expect(bypass.cache).toBe("bypass");
    const miss = await completion(KEYS.a, "cached", prompt);
    expect(miss.cache).toBe("miss");
    await stored(miss.requestId);
    const refreshed = await completion(KEYS.a, "cached", prompt, { "cache-control": "no-cache" });
    expect(refreshed.cache).toBe("bypass");
    await stored(refreshed.requestId);
    expect((await completion(KEYS.a, "cached", prompt)).cache).toBe("hit-exact");
    expect(upstreamCalls(prompt)).toBe(3);

    let headers: Headers | undefined;
    const client = chatClient(transports(h.url)["connect (connect-node, HTTP/1.1)"]!);
    await collect(client.streamChat(userRequest("cached", prompt, { cachePolicy: CachePolicy.BYPASS }), { headers: { authorization: `Bearer ${KEYS.a}` }, onHeader: (h) => (headers = h) }));
    expect(headers?.get("sluice-cache")).toBe("bypass");
    expect(upstreamCalls(prompt)).toBe(4);
  });

  it("replays on the Anthropic Messages edge too, as its own stream of events", async () => {
    const body = JSON.stringify({ model: "cached", max_tokens: 100, stream: true, messages: [{ role: "user", content: fresh("anthropic") }] });
    const post = () => fetch(`${h.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": KEYS.a, "anthropic-version": "2023-06-01" }, body });
    const first = await post();
    const firstText = await first.text();
    expect(first.headers.get("sluice-cache")).toBe("miss");
    await stored(first.headers.get("x-request-id")!);
    const hit = await post();
    expect(hit.headers.get("sluice-cache")).toBe("hit-exact");
    const text = (sse: string) => [...sse.matchAll(/"text_delta","text":"([^"]*)"/g)].map((m) => m[1]).join("");
    const hitText = await hit.text();
    expect(text(hitText)).toBe(simulatedText(3, 6));
    expect(text(hitText)).toBe(text(firstText));
    expect(hitText).toContain("event: message_stop");
  });

  it("stores only completed answers: not a failed one, not one that calls tools (unless the alias says so)", async () => {
    const failing = `#sim fail=status fail_first=1 script=cache-fail-${Date.now()}\nHello`;
    await expect(completion(KEYS.a, "cached", failing)).rejects.toMatchObject({ status: 502 });
    const after = await completion(KEYS.a, "cached", failing);
    expect(after.cache).toBe("miss");

    const tools = fresh("tools");
    const first = await sdk(KEYS.a).chat.completions.create({ model: "tools", messages: [{ role: "user", content: tools }] });
    expect(first.choices[0]!.message.tool_calls).toHaveLength(1);
    await h.waitForLog((l) => l.event === "access" && l.alias === "tools");
    expect((await completion(KEYS.a, "tools", tools)).cache).toBe("miss");
  });

  it("stores an answer that calls tools when the alias sets cacheToolCalls, and replays its calls whole", async () => {
    const prompt = fresh("tools-cached");
    const ask = () =>
      sdk(KEYS.a)
        .chat.completions.create({ model: "toolsCached", messages: [{ role: "user", content: prompt }] })
        .withResponse();
    const first = await ask();
    expect(first.data.choices[0]!.finish_reason).toBe("tool_calls");
    expect(first.data.choices[0]!.message.tool_calls).toHaveLength(2);
    expect(first.response.headers.get("sluice-cache")).toBe("miss");
    await stored(first.response.headers.get("x-request-id")!);
    const second = await ask();
    expect(second.response.headers.get("sluice-cache")).toBe("hit-exact");
    expect(second.data.choices[0]!.finish_reason).toBe("tool_calls");
    expect(second.data.choices[0]!.message.tool_calls).toEqual(first.data.choices[0]!.message.tool_calls);
    expect(upstreamCalls(prompt)).toBe(1);
  });

  it("says off for an alias without a cache, writes cache= on the access line, and counts lookups by result", async () => {
    const off = await completion(KEYS.a, "plain", fresh("off"));
    expect(off.cache).toBe("off");
    const line = await h.waitForLog((l) => l.event === "access" && l.requestId === off.requestId);
    expect(line.cache).toBeUndefined();
    const prompt = fresh("line");
    const first = await completion(KEYS.a, "cached", prompt);
    await stored(first.requestId);
    const hit = await completion(KEYS.a, "cached", prompt);
    expect(await h.waitForLog((l) => l.event === "access" && l.requestId === hit.requestId)).toMatchObject({ cache: "hit-exact", alias: "cached" });
    const metrics = await scrape(`${h.url}/metrics`);
    const lookups = metrics.families.find((f) => f.name === "sluice_cache_lookups_total")!.metrics;
    const hits = lookups.filter((m) => m.labels?.sluice_cache_result === "hit_exact" && m.labels?.gen_ai_request_model === "cached");
    expect(Number(hits[0]!.value)).toBeGreaterThanOrEqual(4);
    const saved = metrics.families.find((f) => f.name === "sluice_cache_saved_usd_micros_total")!.metrics;
    expect(Number(saved[0]!.value)).toBeGreaterThan(0);
  });

  it("AdminService: GetCacheStats reports lookups, hit rate, entries and savings per alias; PurgeCache empties a key's entries", async () => {
    const admin = adminClient(h.url, ADMIN_KEY);
    const prompt = fresh("admin");
    const first = await completion(KEYS.a, "cached", prompt);
    await stored(first.requestId);
    expect((await completion(KEYS.a, "cached", prompt)).cache).toBe("hit-exact");

    const { aliases } = await admin.getCacheStats({});
    expect(aliases.map((a) => a.alias)).toEqual(["cached", "crew", "shared", "tools", "toolsCached"]);
    const cached = aliases[0]!;
    expect(cached.hits).toBeGreaterThan(0n);
    expect(cached.entries).toBeGreaterThan(0n);
    expect(cached.savedUsdMicros).toBeGreaterThan(0n);
    expect(cached.hitRate).toBeCloseTo(Number(cached.hits) / Number(cached.hits + cached.misses + cached.errors), 9);

    const { purged } = await admin.purgeCache({ alias: "cached", keyName: "a" });
    expect(purged).toBeGreaterThan(0n);
    expect((await admin.getCacheStats({})).aliases[0]!.entries).toBe(cached.entries - purged);
    expect((await completion(KEYS.a, "cached", prompt)).cache).toBe("miss");

    const refused = await admin.purgeCache({}).catch((e: unknown) => ConnectError.from(e));
    expect(refused).toMatchObject({ code: Code.InvalidArgument });
    const noCache = await admin.purgeCache({ alias: "plain" }).catch((e: unknown) => ConnectError.from(e));
    expect(noCache).toMatchObject({ code: Code.InvalidArgument });
    const anonymous = await adminClient(h.url)
      .getCacheStats({})
      .catch((e: unknown) => ConnectError.from(e));
    expect(anonymous).toMatchObject({ code: Code.Unauthenticated });
  });

  it("AdminService: PurgeCache by entry id removes the one entry that request produced, and refuses an id beside other filters", async () => {
    const admin = adminClient(h.url, ADMIN_KEY);
    const [one, two] = [fresh("by-id"), fresh("by-id")];
    const producers = [await completion(KEYS.a, "cached", one), await completion(KEYS.a, "cached", two)];
    for (const p of producers) await stored(p.requestId);
    // The hit names its entry by the request that produced it: that is the id PurgeCache takes.
    const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    const hit = await collect(client.streamChat(userRequest("cached", one), { headers: { authorization: `Bearer ${KEYS.a}` } }));
    expect(hit[0]!.delta).toMatchObject({ case: "start", value: { cache: CacheHit.EXACT, cacheRequestId: producers[0]!.requestId } });

    expect((await admin.purgeCache({ requestId: producers[0]!.requestId })).purged).toBe(1n);
    expect((await completion(KEYS.a, "cached", one)).cache).toBe("miss");
    expect((await completion(KEYS.a, "cached", two)).cache).toBe("hit-exact");
    expect((await admin.purgeCache({ requestId: "req_nothing_made_this" })).purged).toBe(0n);

    for (const bad of [{ alias: "cached", requestId: producers[1]!.requestId }, { keyName: "a", requestId: producers[1]!.requestId }, { requestId: "r".repeat(129) }]) {
      expect(await admin.purgeCache(bad).catch((e: unknown) => ConnectError.from(e))).toMatchObject({ code: Code.InvalidArgument });
    }
    expect((await completion(KEYS.a, "cached", two)).cache).toBe("hit-exact");
  });
});
