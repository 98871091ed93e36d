import OpenAI from "openai";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { idDigest, seal, secretFromId } from "../src/core/sealed-entry.js";
import { createMemoryReplayStore } from "../src/store/memory-replay-store.js";
import { createRedisReplayStore } from "../src/store/redis-replay-store.js";
import type { SluiceRedisClient } from "../src/store/redis-tenant-store.js";
import type { ReplayEntry } from "../src/store/replay-store.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { dropPrefix, inspector, SHARED_REDIS_URL, startOwnRedis, storeClient, testPrefix } from "./helpers/redis.js";

const entry: ReplayEntry = {
  provider: "claude",
  model: "claude-sonnet-4-5",
  reasoning: [
    { type: "reasoning", text: "weigh the cities", signature: "sig.abc" },
    { type: "reasoning", text: "", redactedData: "redacted.0.xyz" },
  ],
  toolSignatures: { call_1: "fcsig.1" },
};

const prefixes: string[] = [];
const clients: SluiceRedisClient[] = [];
afterEach(() => {
  for (const client of clients.splice(0)) client.disconnect();
});
afterAll(async () => {
  for (const prefix of prefixes) await dropPrefix(prefix);
});

async function replica(prefix: string, options: { maxEntryBytes?: number; url?: string } = {}) {
  const client = await storeClient(options.url ?? SHARED_REDIS_URL);
  clients.push(client);
  const local = createMemoryReplayStore();
  return { client, local, store: createRedisReplayStore({ client, prefix, ttlMs: 60_000, maxEntryBytes: options.maxEntryBytes ?? 1 << 20, timeoutMs: 2_000, local }) };
}

/** A value sealed as the store seals it (under the tool-call id), so only its content is foreign. */
const sealedFor = (id: string, text: string) => seal(text, secretFromId(id, "sluice.replay.v1"));

describe("the Redis replay store", () => {
  it("a turn kept by one replica is found by another, under every tool-call id, with a TTL", async () => {
    const prefix = testPrefix("replay");
    prefixes.push(prefix);
    const a = await replica(prefix);
    const b = await replica(prefix);
    await a.store.put(["call_1", "call_2"], entry);
    expect(await b.store.get("call_1")).toEqual(entry);
    expect(await b.store.get("call_2")).toEqual(entry);
    expect(await b.store.get("call_3")).toBeUndefined();
    expect(await b.local.get("call_1")).toBeUndefined(); // b answered from Redis, not from a copy of its own
    const redis = await inspector();
    try {
      const ttl = await redis.pTTL(`${prefix}replay:${idDigest("call_1")}`);
      const raw = (await redis.get(`${prefix}replay:${idDigest("call_1")}`)) ?? "";
      expect(raw).not.toBe("");
      for (const part of entry.reasoning.filter((p) => p.text !== "")) expect(raw).not.toContain(part.text);
      expect(await redis.get(`${prefix}replay:call_1`)).toBeNull();
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    } finally {
      redis.destroy();
    }
  });

  it("keeps a turn over maxEntryBytes on its own replica only", async () => {
    const prefix = testPrefix("replay");
    prefixes.push(prefix);
    const a = await replica(prefix, { maxEntryBytes: 64 });
    const b = await replica(prefix);
    await a.store.put(["call_big"], entry);
    expect(await a.store.get("call_big")).toEqual(entry);
    expect(await b.store.get("call_big")).toBeUndefined();
  });

  it("treats a damaged or foreign value as a miss", async () => {
    const prefix = testPrefix("replay");
    prefixes.push(prefix);
    const b = await replica(prefix);
    const redis = await inspector();
    try {
      await redis.set(`${prefix}replay:${idDigest("not-json")}`, sealedFor("not-json", "{"));
      await redis.set(`${prefix}replay:${idDigest("wrong-shape")}`, sealedFor("wrong-shape", JSON.stringify({ provider: "p", model: "m", reasoning: [{ text: 42 }], toolSignatures: {} })));
      await redis.set(`${prefix}replay:${idDigest("array-signatures")}`, sealedFor("array-signatures", JSON.stringify({ provider: "p", model: "m", reasoning: [], toolSignatures: ["x"] })));
    } finally {
      redis.destroy();
    }
    expect(await b.store.get("not-json")).toBeUndefined();
    expect(await b.store.get("wrong-shape")).toBeUndefined();
    expect(await b.store.get("array-signatures")).toBeUndefined();
  });

  it("while Redis is away, keeps and finds turns on its own replica, and a read never throws", async () => {
    const own = await startOwnRedis();
    try {
      const a = await replica("sluice-test:replay-down:", { url: own.url });
      await own.kill();
      // The client may not have noticed the kill yet: the write to Redis can fail, the local copy may not.
      await a.store.put(["call_1"], entry).catch(() => undefined);
      expect(await a.store.get("call_1")).toEqual(entry);
      expect(await a.store.get("call_other")).toBeUndefined();
    } finally {
      await own.kill();
    }
  });
});

describe("two gateways on one Redis", () => {
  const running: Harness[] = [];
  afterAll(async () => {
    for (const h of running) await h.close();
  });

  it("an OpenAI SDK caller's next tool turn with thinking succeeds on the other replica", async () => {
    const prefix = testPrefix("replay-gw");
    prefixes.push(prefix);
    const start = () => startHarness({ kind: "anthropic", models: { sim: "sim-1" }, store: { redis: { url: SHARED_REDIS_URL, prefix } } });
    const a = await start();
    running.push(a);
    const b = await start();
    running.push(b);
    const tools: OpenAI.ChatCompletionTool[] = [{ type: "function", function: { name: "lookup", description: "Look up", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
    const turn = (h: Harness, messages: OpenAI.ChatCompletionMessageParam[]) =>
      new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "unused", maxRetries: 0 }).chat.completions.stream({ model: "sim", messages, tools, reasoning_effort: "high" }).finalChatCompletion();
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "#sim reasoning=4 tokens=2 tools=2 seed=31 redacted=1" }];
    const first = (await turn(a, messages)).choices[0]!.message;
    expect(first.tool_calls).toHaveLength(2);
    const history: OpenAI.ChatCompletionMessageParam[] = [
      ...messages,
      { role: "assistant", content: first.content, tool_calls: first.tool_calls! },
      ...first.tool_calls!.map((c) => ({ role: "tool" as const, tool_call_id: c.id, content: '{"temp":21}' })),
    ];
    // The simulator refuses a thinking + tools continuation without the signed turn: b can only succeed with a's entry.
    const next = (await turn(b, history)).choices[0]!.message;
    // Accepted, and answered as a model in a tool loop does: quoting the results.
    expect(next.content).toBe('lookup returned: {"temp":21}\nlookup returned: {"temp":21}');
  });
});
