import { describe, expect, it } from "vitest";
import { builtInCapabilities } from "../../src/config/capability-table.js";
import type { ModelRoute, RouteTarget } from "../../src/config/config.js";
import type { ChatMessage, ChatRequest } from "../../src/core/chat-request.js";
import { GatewayError } from "../../src/core/errors.js";
import { aliasCapabilities } from "../../src/routing/alias-capabilities.js";
import { capToolResults, truncateToFit, turnsOf } from "../../src/routing/fit-context.js";
import { missingOf, needsOf, promptTokenBound } from "../../src/routing/request-needs.js";
import { routeByNeed } from "../../src/routing/route-by-need.js";
import { createSummaryCache, SUMMARY_BLOCK_TURNS, summarizeToFit } from "../../src/routing/summarize-turns.js";

/** One token per word: a tokenizer whose counts a test can reason about. */
const words = (text: string) => text.split(/\s+/).filter(Boolean).length;
const counter = () => Promise.resolve(words);

const text = (role: ChatMessage["role"], t: string, extra: Partial<ChatMessage> = {}): ChatMessage => ({ role, content: [{ type: "text", text: t }], ...extra });

function request(messages: ChatMessage[], extra: Partial<ChatRequest> = {}): ChatRequest {
  return { model: "a", messages, tools: [], sampling: { stop: [] }, metadata: { labels: {} }, ...extra };
}

const target = (model: string, capabilities?: RouteTarget["capabilities"]) => ({ key: `p/${model}`, model, capabilities }) as unknown as RouteTarget;
const route = (targets: RouteTarget[], extra: Partial<ModelRoute> = {}) => ({ alias: "a", targets, strategy: "priority", retry: { maxAttempts: 1, baseBackoffMs: 0, maxBackoffMs: 0 }, dropUnsupportedParams: false, ...extra }) as ModelRoute;

describe("what a request needs, and what a target lacks", () => {
  it("reads tools, images, strict schemas, reasoning and max_tokens from the request", () => {
    const needs = needsOf(
      request([{ role: "user", content: [{ type: "image_url", url: "data:," }] }], {
        tools: [{ name: "t", description: "", parameters: {} }],
        responseFormat: { type: "json_schema", name: "s", schema: {} },
        reasoning: { effort: "low" },
        sampling: { stop: [], maxTokens: 500 },
      }),
    );
    expect(needs).toEqual({ tools: true, vision: true, jsonSchema: true, reasoning: true, outputTokens: 500 });
    expect(needsOf(request([], { tools: [{ name: "t", description: "", parameters: {} }], toolChoice: { type: "none" }, reasoning: { effort: "none" } }))).toMatchObject({ tools: false, reasoning: false });
  });

  it("unknown is able; a declared false or a too small output limit is missing", () => {
    const needs = needsOf(request([text("user", "hi")], { tools: [{ name: "t", description: "", parameters: {} }], sampling: { stop: [], maxTokens: 9_000 } }));
    expect(missingOf(needs, undefined)).toBeUndefined();
    expect(missingOf(needs, {})).toBeUndefined();
    expect(missingOf(needs, { tools: false })).toBe("tools");
    expect(missingOf(needs, { tools: true, maxOutputTokens: 8_192 })).toBe("maxOutputTokens");
  });

  it("the byte bound is never below what a tokenizer counts (one token per byte at most)", () => {
    const r = request([text("user", "数据处理 data 😀 ".repeat(50))]);
    expect(promptTokenBound(r)).toBeGreaterThanOrEqual(words(r.messages[0]!.content[0]!.type === "text" ? (r.messages[0]!.content[0] as { text: string }).text : ""));
  });

  it("the built-in table: the longest prefix wins, ids compared in lower case and without models/", () => {
    expect(builtInCapabilities("GPT-4o-mini-2024-07-18").contextWindow).toBe(128_000);
    expect(builtInCapabilities("models/gemini-2.5-flash").reasoning).toBe(true);
    expect(builtInCapabilities("claude-3-7-sonnet-latest").reasoning).toBe(true);
    expect(builtInCapabilities("claude-3-5-haiku-latest").reasoning).toBe(false);
    expect(builtInCapabilities("my-finetune")).toEqual({});
  });

  it("an alias's union and intersection keep unknown apart from no", () => {
    const caps = aliasCapabilities([target("x", { vision: false, contextWindow: 32_000 }), target("y", { vision: true, contextWindow: 128_000 }), target("z", {})]);
    expect(caps.anyTarget).toEqual({ vision: true });
    expect(caps.everyTarget).toEqual({ vision: false, contextWindow: 32_000 });
  });
});

describe("fitting the context window", () => {
  const convo = [
    text("system", "sys"),
    text("user", "one two three"),
    { role: "assistant", content: [], toolCalls: [{ id: "c", name: "f", arguments: "{}" }] } as ChatMessage,
    text("tool", "result of the call", { toolCallId: "c" }),
    text("assistant", "answer one"),
    text("user", "four five six"),
    text("assistant", "answer two"),
    text("user", "last question"),
  ];

  it("turns open with a user message and keep tool calls with their results", () => {
    expect(turnsOf(convo)).toEqual({ system: [0], turns: [[1, 2, 3, 4], [5, 6], [7]] });
  });

  it("drops whole turns from the oldest, never the system prompt nor the last turns", () => {
    const r = request(convo);
    const fitted = truncateToFit(r, 30, { keepSystem: true, keepLastTurns: 1 }, words)!;
    expect(fitted.dropped).toBe(1);
    expect(fitted.request.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "user"]);
    expect(truncateToFit(r, 5, { keepSystem: true, keepLastTurns: 2 }, words)).toBeUndefined();
    expect(truncateToFit(r, 1_000, { keepSystem: true, keepLastTurns: 1 }, words)).toEqual({ request: r, dropped: 0 });
  });

  it("caps a long tool result to its head and tail, saying how much was elided", () => {
    const long = Array.from({ length: 1_000 }, (_, i) => `w${i}`).join(" ");
    const { request: capped, capped: n } = capToolResults(request([text("tool", long, { toolCallId: "c" }), text("user", long)]), 100, words);
    expect(n).toBe(1);
    const out = (capped.messages[0]!.content[0] as { text: string }).text;
    expect(out.startsWith("w0 w1")).toBe(true);
    expect(out.endsWith("w999")).toBe(true);
    expect(out).toContain("about 900 tokens elided");
    // Only tool results are capped.
    expect((capped.messages[1]!.content[0] as { text: string }).text).toBe(long);
    expect(words(out)).toBeLessThan(130);
  });

  it("routeByNeed: drops targets that cannot serve, refuses when none can, truncates only when configured", async () => {
    const small = target("small", { contextWindow: 2_100, vision: false });
    const big = target("big", { contextWindow: 3_100 });
    const r = request([text("system", "s"), ...Array.from({ length: 5 }, (_, i) => text(i % 2 ? "assistant" : "user", "x ".repeat(300)))]);
    const fits = await routeByNeed(request([text("user", "hi")]), route([small, big]), { counter });
    expect(fits.route.targets).toHaveLength(2);
    expect((await routeByNeed(r, route([small, big]), { counter })).route.targets.map((t) => t.model)).toEqual(["big"]);
    await expect(routeByNeed(request([{ role: "user", content: [{ type: "image_url", url: "data:," }] }]), route([small]), { counter })).rejects.toThrow(/image input/);
    const tooLong = request([...r.messages, ...r.messages.slice(1), ...r.messages.slice(1)]);
    await expect(routeByNeed(tooLong, route([small, big]), { counter })).rejects.toBeInstanceOf(GatewayError);
    const truncated = await routeByNeed(tooLong, route([small, big], { context: { strategy: "truncate", keepSystem: true, keepLastTurns: 2, reserveOutputTokens: 100 } }), { counter });
    expect(truncated.context).toMatch(/^truncated=\d+$/);
    expect(truncated.route.targets.map((t) => t.model)).toEqual(["big"]);
  });

  it("summarizeToFit: whole turns in blocks, one summary message after the system prompt, cached per scope", async () => {
    const turns = Array.from({ length: 30 }, (_, i) => [text("user", `q${i} ${"w ".repeat(200)}`), text("assistant", `a${i}`)]).flat();
    const r = request([text("system", "sys"), ...turns]);
    const asked: number[] = [];
    const summarize = async (messages: readonly ChatMessage[]) => {
      asked.push(messages.length);
      return "short summary";
    };
    const cache = createSummaryCache();
    const fitted = (await summarizeToFit(r, 4_500, { keepLastTurns: 2 }, words, summarize, cache, "k"))!;
    expect(fitted.summarized % SUMMARY_BLOCK_TURNS).toBe(0);
    expect(asked).toEqual([2 * fitted.summarized]);
    expect(fitted.request.messages[0]).toBe(r.messages[0]);
    expect((fitted.request.messages[1]!.content[0] as { text: string }).text).toContain("short summary");
    expect(fitted.request.messages[2]).toBe(r.messages[1 + 2 * fitted.summarized]);
    // The same old turns again: from the cache; another scope asks again.
    await summarizeToFit(request([...r.messages, text("user", "more")]), 4_500, { keepLastTurns: 2 }, words, summarize, cache, "k");
    expect(asked).toHaveLength(1);
    await summarizeToFit(r, 4_500, { keepLastTurns: 2 }, words, summarize, cache, "other");
    expect(asked).toHaveLength(2);
    // A summarizer that fails rejects (the caller truncates); one that cannot fit at all gives undefined.
    await expect(summarizeToFit(r, 4_500, { keepLastTurns: 2 }, words, () => Promise.reject(new Error("down")), createSummaryCache(), "k")).rejects.toThrow("down");
    expect(await summarizeToFit(r, 100, { keepLastTurns: 2 }, words, summarize, cache, "k")).toBeUndefined();
  });
});
