import { createHash } from "node:crypto";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { canonicalJson, exactCacheKeys } from "../../src/cache/cache-key.js";
import type { CacheStore } from "../../src/cache/cache-store.js";
import { createAnswerCapture } from "../../src/cache/cached-answer.js";
import { createMemoryCacheStore } from "../../src/cache/memory-cache-store.js";
import { createResponseCache } from "../../src/cache/response-cache.js";
import type { ModelRoute } from "../../src/config/config.js";
import { cachePolicyFromHeader } from "../../src/core/cache-policy.js";
import type { ChatRequest } from "../../src/core/chat-request.js";
import { seal, unseal } from "../../src/core/sealed-entry.js";
import { createLogger } from "../../src/logging/logger.js";

afterEach(() => {
  vi.useRealTimers();
});

const request = (text: string, extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: "cached",
  messages: [{ role: "user", content: [{ type: "text", text }] }],
  tools: [],
  sampling: { stop: [] },
  metadata: { labels: {} },
  ...extra,
});

const origin = { requestId: "r1", target: "sim/m", provider: "sim", model: "m" };

describe("cache keys", () => {
  it("ignore key order and the caller's metadata; change with anything that shapes the answer and with the scope", () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: undefined }] })).toBe('{"a":[{"d":2}],"b":1}');
    const base = exactCacheKeys(request("hi"), "key=a");
    expect(exactCacheKeys(request("hi", { metadata: { labels: { team: "x" }, userId: "u" } }), "key=a").id).toBe(base.id);
    expect(exactCacheKeys(request("hi", { sampling: { stop: [], temperature: 0.5 } }), "key=a").id).not.toBe(base.id);
    expect(exactCacheKeys(request("hi!"), "key=a").id).not.toBe(base.id);
    expect(exactCacheKeys(request("hi"), "key=b").id).not.toBe(base.id);
    expect(base.secret.equals(exactCacheKeys(request("hi"), "key=a").secret)).toBe(true);
    expect(base.secret.toString("hex")).not.toBe(base.id);
  });

  it("are the digests earlier builds stored entries under (a Hash fed purpose, scope and text), non-ASCII text and scope included", () => {
    const req = request("héllo 日本 🙂", { sampling: { stop: ["\n"], temperature: 0.2 } });
    const scope = "key=é";
    const { metadata: _metadata, ...shaping } = req;
    const streamed = (purpose: string) => createHash("sha256").update(purpose).update("\0").update(scope).update("\0").update(canonicalJson(shaping)).digest();
    const keys = exactCacheKeys(req, scope);
    expect(keys.id).toBe(streamed("id").toString("hex"));
    expect(keys.secret.equals(streamed("seal"))).toBe(true);
  });

  it("seal an entry so that only the same request opens it, and reject a tampered one", () => {
    const { secret } = exactCacheKeys(request("hi"), "key=a");
    const sealed = seal("the answer", secret);
    expect(unseal(sealed, secret)).toBe("the answer");
    expect(unseal(sealed, exactCacheKeys(request("hello"), "key=a").secret)).toBeUndefined();
    const bytes = Buffer.from(sealed, "base64");
    bytes[bytes.length - 1]! ^= 1;
    expect(unseal(bytes.toString("base64"), secret)).toBeUndefined();
  });
});

describe("the answer capture", () => {
  it("joins text fragments and keeps a completed answer with its usage", () => {
    const capture = createAnswerCapture({ maxBytes: 1024, toolCalls: false });
    for (const text of ["Par", "is", "."]) capture.observe({ type: "text", text });
    capture.observe({ type: "usage", inputTokens: 3, outputTokens: 3, cachedInputTokens: 0, reasoningTokens: 0 });
    capture.observe({ type: "finish", reason: "stop" });
    const { answer, verdict } = capture.result(origin, 5);
    expect(verdict).toBe("stored");
    expect(answer!.deltas).toEqual([
      { type: "text", text: "Paris." },
      { type: "usage", inputTokens: 3, outputTokens: 3, cachedInputTokens: 0, reasoningTokens: 0 },
      { type: "finish", reason: "stop" },
    ]);
  });

  it("refuses what is cut short, too large, or calls tools without the alias's consent", () => {
    const cut = createAnswerCapture({ maxBytes: 1024, toolCalls: false });
    cut.observe({ type: "text", text: "Par" });
    cut.observe({ type: "finish", reason: "length" });
    expect(cut.result(origin, 0).verdict).toBe("not_completed");

    const large = createAnswerCapture({ maxBytes: 10, toolCalls: false });
    large.observe({ type: "text", text: "far more than ten characters" });
    expect(large.result(origin, 0).verdict).toBe("too_large");

    // Providers end an answer that calls tools with `tool_calls` (OpenAI, Anthropic's tool_use) or `stop` (Gemini).
    for (const reason of ["tool_calls", "stop"] as const) {
      for (const toolCalls of [false, true]) {
        const tools = createAnswerCapture({ maxBytes: 1024, toolCalls });
        tools.observe({ type: "tool_call", index: 0, id: "c", name: "f", arguments: "{}" });
        tools.observe({ type: "usage", inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, reasoningTokens: 0 });
        tools.observe({ type: "finish", reason });
        expect(tools.result(origin, 0).verdict).toBe(toolCalls ? "stored" : "tool_calls");
      }
    }
    // `tool_calls` with no tool call is not a finished answer.
    const empty = createAnswerCapture({ maxBytes: 1024, toolCalls: true });
    empty.observe({ type: "usage", inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, reasoningTokens: 0 });
    empty.observe({ type: "finish", reason: "tool_calls" });
    expect(empty.result(origin, 0).verdict).toBe("not_completed");
    // A tool call's arguments count toward the entry's size.
    const big = createAnswerCapture({ maxBytes: 1024, toolCalls: true });
    big.observe({ type: "tool_call", index: 0, id: "c", name: "f", arguments: JSON.stringify({ note: "x".repeat(2048) }) });
    expect(big.result(origin, 0).verdict).toBe("too_large");
  });
});

describe("the memory store", () => {
  it("expires entries by the injected clock and evicts the least recently used past its byte bound", async () => {
    let now = 0;
    const store = createMemoryCacheStore({ maxBytes: 100, maxGroupBytes: 100, now: () => now });
    const ttl = { ttlMs: 1_000, group: "g" };
    await store.set("a", "x".repeat(20), ttl);
    await store.set("b", "y".repeat(20), ttl);
    expect(await store.get("a", "g")).toBe("x".repeat(20)); // a is now the most recently used
    await store.set("c", "z".repeat(20), ttl);
    expect(await store.get("b", "g")).toBeUndefined();
    expect(await store.get("a", "g")).toBeDefined();
    now = 1_000;
    expect(await store.get("c", "g")).toBeUndefined();
    expect(await store.purge("a")).toBe(1);
    expect(await store.size("")).toBe(0);
  });

  it("removes an entry by the request that produced it; an evicted or expired entry names nothing", async () => {
    let now = 0;
    const store = createMemoryCacheStore({ maxBytes: 150, maxGroupBytes: 150, now: () => now });
    await store.set("a", "x".repeat(20), { ttlMs: 1_000, group: "g", producedBy: "req_a" });
    await store.set("b", "y".repeat(20), { ttlMs: 1_000, group: "g", producedBy: "req_b" });
    expect(await store.purgeProducedBy("req_a")).toBe(1);
    expect(await store.get("a", "g")).toBeUndefined();
    expect(await store.purgeProducedBy("req_a")).toBe(0);
    await store.set("c", "z".repeat(20), { ttlMs: 1_000, group: "g", producedBy: "req_c" });
    await store.set("d", "w".repeat(20), { ttlMs: 5_000, group: "g", producedBy: "req_d" }); // past the bound: b, the oldest, goes
    expect(await store.get("b", "g")).toBeUndefined();
    expect(await store.purgeProducedBy("req_b")).toBe(0);
    now = 1_000;
    expect(await store.purgeProducedBy("req_c")).toBe(0); // expired, never read since
    expect(await store.purgeProducedBy("req_d")).toBe(1);
    expect(await store.size("")).toBe(0);
  });

  it("bounds each group apart: one busy group evicts its own least recently used entries, never another's", async () => {
    const store = createMemoryCacheStore({ maxBytes: 1_000, maxGroupBytes: 100 });
    await store.set("quiet", "q".repeat(20), { ttlMs: 60_000, group: "quiet" });
    for (const key of ["a", "b", "c", "d"]) expect(await store.set(key, "x".repeat(20), { ttlMs: 60_000, group: "busy" })).toBe(true);
    expect(await store.get("a", "busy")).toBeUndefined();
    expect(await store.get("d", "busy")).toBeDefined();
    expect(await store.get("quiet", "quiet")).toBeDefined();
    // Larger than the group's bound on its own: not stored, nothing evicted for it.
    expect(await store.set("huge", "h".repeat(60), { ttlMs: 60_000, group: "busy" })).toBe(false);
    expect(await store.get("d", "busy")).toBeDefined();
  });
});

describe("the response cache's lookup", () => {
  const route = {
    alias: "cached",
    targets: [],
    strategy: "priority",
    retry: { maxAttempts: 1, baseBackoffMs: 0, maxBackoffMs: 0 },
    dropUnsupportedParams: false,
    cache: { exactTtlMs: 60_000, scope: "key", cacheToolCalls: false },
  } as const satisfies ModelRoute;
  const settings = { lookupTimeoutMs: 50, chargeHits: false, maxEntryBytes: 1024, maxMemoryBytes: 1 << 20, redisMaxBytes: 1 << 20, aliasMaxBytes: 1 << 20, maxEmbedChars: 8192 };
  const memory = () => createMemoryCacheStore({ maxBytes: 1 << 20, maxGroupBytes: 1 << 20 });
  const call = { requestId: "r", signal: new AbortController().signal };
  const logger = createLogger("silent", new PassThrough());

  it("is a miss counted as an error when the store does not answer within the deadline, and never fails", async () => {
    vi.useFakeTimers();
    const hanging: CacheStore = { get: () => new Promise(() => undefined), set: () => Promise.resolve(true), purge: () => Promise.resolve(0), purgeProducedBy: () => Promise.resolve(0), size: () => Promise.resolve(0) };
    const cache = createResponseCache({ store: hanging, settings, logger });
    const lookup = cache.lookup(request("hi"), route, undefined, "default", call);
    await vi.advanceTimersByTimeAsync(50);
    const result = await lookup;
    expect(result.result).toBe("error");
    expect(result.store).toBeDefined();
  });

  it("is a miss when the store fails or holds something that is not an entry", async () => {
    const failing: CacheStore = { get: () => Promise.reject(new Error("down")), set: () => Promise.resolve(true), purge: () => Promise.resolve(0), purgeProducedBy: () => Promise.resolve(0), size: () => Promise.resolve(0) };
    expect((await createResponseCache({ store: failing, settings, logger }).lookup(request("hi"), route, undefined, "default", call)).result).toBe("error");
    const junk = memory();
    const cache = createResponseCache({ store: junk, settings, logger });
    const first = await cache.lookup(request("hi"), route, undefined, "default", call);
    await junk.set(first.store!.exact!.key, "not sealed", { ttlMs: 60_000, group: "cached" });
    expect((await cache.lookup(request("hi"), route, undefined, "default", call)).result).toBe("miss");
  });

  it("stores what a miss completed, and follows the caller's policy", async () => {
    const cache = createResponseCache({ store: memory(), settings, logger });
    const miss = await cache.lookup(request("hi"), route, undefined, "default", call);
    miss.store!.capture.observe({ type: "text", text: "hello" });
    miss.store!.capture.observe({ type: "usage", inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, reasoningTokens: 0 });
    miss.store!.capture.observe({ type: "finish", reason: "stop" });
    cache.offer("cached", miss.store!, origin);
    // The memory store takes the entry in the call itself.
    expect((await cache.lookup(request("hi"), route, undefined, "default", call)).result).toBe("hit_exact");
    expect((await cache.lookup(request("hi"), route, undefined, "no_lookup", call)).result).toBe("bypass");
    expect((await cache.lookup(request("hi"), route, undefined, "bypass", call)).store).toBeUndefined();
    expect((await cache.lookup(request("hi"), route, undefined, "no_store", call)).result).toBe("hit_exact");
  });

  it("reads Cache-Control: no-store wins over no-cache", () => {
    expect(cachePolicyFromHeader(undefined)).toBe("default");
    expect(cachePolicyFromHeader("no-cache")).toBe("no_lookup");
    expect(cachePolicyFromHeader("No-Cache, no-store")).toBe("bypass");
    expect(cachePolicyFromHeader("max-age=0")).toBe("default");
  });
});
