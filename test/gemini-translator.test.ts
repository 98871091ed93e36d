import { describe, expect, it } from "vitest";
import { createGeminiTranslator } from "../src/providers/gemini/gemini-translator.js";
import { type Fixture, fixtureTests, testTarget, translateWire } from "./helpers/translate.js";

const target = testTarget("gemini");
const create = () => createGeminiTranslator(target);
const translate = (wire: string) => translateWire(create, wire);

const chunk = (parts: unknown[], extra: Record<string, unknown> = {}, top: Record<string, unknown> = {}) =>
  `data: ${JSON.stringify({ candidates: [{ content: { role: "model", parts }, index: 0, ...extra }], modelVersion: "gemini-x", ...top })}\r\n\r\n`;
const usage = (prompt: number, candidates: number, thoughts = 0, cached = 0) => ({
  usageMetadata: { promptTokenCount: prompt, candidatesTokenCount: candidates, thoughtsTokenCount: thoughts, cachedContentTokenCount: cached, totalTokenCount: prompt + candidates + thoughts },
});

const FIXTURES: Fixture[] = [
  {
    name: "text, usage only at the end",
    wire: chunk([{ text: "Hel" }]) + chunk([{ text: "lo" }]) + chunk([{ text: "" }], { finishReason: "STOP" }, usage(4, 2)),
    deltas: [
      { type: "text", text: "Hel" },
      { type: "text", text: "lo" },
      { type: "usage", inputTokens: 4, outputTokens: 2, cachedInputTokens: 0, reasoningTokens: 0 },
      { type: "finish", reason: "stop" },
    ],
  },
  {
    name: "Google Search grounding: each distinct query the model searched is a web search in the usage",
    wire:
      chunk([{ text: "Rome is sunny." }], { groundingMetadata: { webSearchQueries: ["weather rome", "rome forecast"] } }) +
      chunk([{ text: "" }], { finishReason: "STOP", groundingMetadata: { webSearchQueries: ["weather rome", "rome forecast"] } }, usage(5, 4)),
    deltas: [
      { type: "text", text: "Rome is sunny." },
      { type: "usage", inputTokens: 5, outputTokens: 4, cachedInputTokens: 0, reasoningTokens: 0, webSearches: 2 },
      { type: "finish", reason: "stop" },
    ],
  },
  {
    name: "interleaved text and parallel function calls (whole calls, one with an id)",
    wire:
      chunk([{ text: "Checking." }]) +
      chunk([{ functionCall: { id: "fc_1", name: "weather", args: { city: "Paris" } } }, { functionCall: { id: "fc_2", name: "time", args: {} } }]) +
      chunk([{ text: "" }], { finishReason: "STOP" }, usage(9, 12, 0, 3)),
    deltas: [
      { type: "text", text: "Checking." },
      { type: "tool_call", index: 0, id: "fc_1", name: "weather", arguments: '{"city":"Paris"}' },
      { type: "tool_call", index: 1, id: "fc_2", name: "time", arguments: "{}" },
      { type: "usage", inputTokens: 9, outputTokens: 12, cachedInputTokens: 3, reasoningTokens: 0 },
      { type: "finish", reason: "tool_calls" },
    ],
  },
  {
    name: "thought parts then text; thinking counts as output",
    wire: chunk([{ text: "pondering", thought: true }]) + chunk([{ text: "answer" }], { finishReason: "STOP" }, usage(2, 1, 7)),
    deltas: [
      { type: "reasoning", text: "pondering" },
      { type: "text", text: "answer" },
      { type: "usage", inputTokens: 2, outputTokens: 8, cachedInputTokens: 0, reasoningTokens: 7 },
      { type: "finish", reason: "stop" },
    ],
  },
  {
    name: "comment pings before the first event",
    wire: ": ping\r\n\r\n" + chunk([{ text: "a" }], { finishReason: "MAX_TOKENS" }),
    deltas: [
      { type: "text", text: "a" },
      { type: "finish", reason: "length" },
    ],
  },
  {
    name: "safety block → content_filter",
    wire: chunk([{ text: "I" }]) + chunk([], { finishReason: "SAFETY" }, usage(1, 1)),
    deltas: [
      { type: "text", text: "I" },
      { type: "usage", inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, reasoningTokens: 0 },
      { type: "finish", reason: "content_filter" },
    ],
  },
  {
    name: "blocked prompt (promptFeedback, no candidates) → content_filter",
    wire: `data: ${JSON.stringify({ promptFeedback: { blockReason: "SAFETY" }, ...usage(5, 0) })}\n\n`,
    deltas: [
      { type: "usage", inputTokens: 5, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 },
      { type: "finish", reason: "content_filter" },
    ],
  },
];

describe("Gemini stream translation", () => {
  fixtureTests(create, FIXTURES);

  it("synthesizes a unique id for a function call without one", () => {
    const deltas = translate(chunk([{ functionCall: { name: "f", args: { a: 1 } } }, { functionCall: { name: "f", args: {} } }], { finishReason: "STOP" }));
    const ids = deltas.flatMap((d) => (d.type === "tool_call" ? [d.id] : []));
    expect(ids).toHaveLength(2);
    expect(ids[0]).toMatch(/^call_[A-Za-z0-9_-]{22}$/);
    expect(ids[0]).not.toBe(ids[1]);
  });

  it("an error object mid-stream → upstream_stream_error", () => {
    expect(() => translate(chunk([{ text: "a" }]) + `data: {"error":{"code":500,"message":"boom","status":"INTERNAL"}}\n\n`)).toThrow(expect.objectContaining({ code: "upstream_stream_error" }));
  });

  it("a stream that ends without a finishReason is incomplete", () => {
    expect(() => translate(chunk([{ text: "a" }]))).toThrow(expect.objectContaining({ code: "upstream_protocol" }));
  });
});
