import { describe, expect, it } from "vitest";
import { createAnthropicTranslator } from "../src/providers/anthropic/anthropic-translator.js";
import { type Fixture, fixtureTests, testTarget, translateWire } from "./helpers/translate.js";

const target = testTarget("anthropic");
const create = () => createAnthropicTranslator(target);
const translate = (wire: string) => translateWire(create, wire);

/** One SSE event as the Messages API sends it: a named event whose data repeats the type. */
const ev = (type: string, data: Record<string, unknown> = {}) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const start = (input = 25, extra: Record<string, unknown> = {}) =>
  ev("message_start", {
    message: { id: "msg_1", type: "message", role: "assistant", model: "claude", content: [], stop_reason: null, usage: { input_tokens: input, output_tokens: 1, ...extra } },
  });
const textBlock = (index: number, ...texts: string[]) =>
  ev("content_block_start", { index, content_block: { type: "text", text: "" } }) + texts.map((text) => ev("content_block_delta", { index, delta: { type: "text_delta", text } })).join("") + ev("content_block_stop", { index });
const toolBlock = (index: number, id: string, name: string, ...json: string[]) =>
  ev("content_block_start", { index, content_block: { type: "tool_use", id, name, input: {} } }) +
  json.map((partial_json) => ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json } })).join("") +
  ev("content_block_stop", { index });
const end = (reason: string, output: number, stopSequence: string | null = null) => ev("message_delta", { delta: { stop_reason: reason, stop_sequence: stopSequence }, usage: { output_tokens: output } }) + ev("message_stop");

const FIXTURES: Fixture[] = [
  {
    name: "text, usage only at the end",
    wire: start(12) + textBlock(0, "Hello", " there") + end("end_turn", 6),
    deltas: [
      { type: "usage", inputTokens: 12, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0, early: true },
      { type: "text", text: "Hello" },
      { type: "text", text: " there" },
      { type: "usage", inputTokens: 12, outputTokens: 6, cachedInputTokens: 0, reasoningTokens: 0 },
      { type: "finish", reason: "stop" },
    ],
  },
  {
    name: "interleaved text and tool calls, several in parallel",
    wire: start() + textBlock(0, "Checking.") + toolBlock(1, "toolu_a", "weather", '{"city":', ' "Paris"}') + toolBlock(2, "toolu_b", "time", '{"tz":"CET"}') + textBlock(3, "Done.") + end("tool_use", 40),
    deltas: [
      { type: "usage", inputTokens: 25, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0, early: true },
      { type: "text", text: "Checking." },
      { type: "tool_call", index: 0, id: "toolu_a", name: "weather", arguments: "" },
      { type: "tool_call", index: 0, arguments: '{"city":' },
      { type: "tool_call", index: 0, arguments: ' "Paris"}' },
      { type: "tool_call", index: 1, id: "toolu_b", name: "time", arguments: "" },
      { type: "tool_call", index: 1, arguments: '{"tz":"CET"}' },
      { type: "text", text: "Done." },
      { type: "usage", inputTokens: 25, outputTokens: 40, cachedInputTokens: 0, reasoningTokens: 0 },
      { type: "finish", reason: "tool_calls" },
    ],
  },
  {
    name: "thinking (with signature) then text",
    wire:
      start() +
      ev("content_block_start", { index: 0, content_block: { type: "thinking", thinking: "" } }) +
      ev("content_block_delta", { index: 0, delta: { type: "thinking_delta", thinking: "Let me think" } }) +
      ev("content_block_delta", { index: 0, delta: { type: "signature_delta", signature: "EqQB..." } }) +
      ev("content_block_stop", { index: 0 }) +
      textBlock(1, "42") +
      end("end_turn", 9),
    deltas: [
      { type: "usage", inputTokens: 25, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0, early: true },
      { type: "reasoning", text: "Let me think" },
      { type: "reasoning", text: "", signature: "EqQB..." },
      { type: "text", text: "42" },
      { type: "usage", inputTokens: 25, outputTokens: 9, cachedInputTokens: 0, reasoningTokens: 0 },
      { type: "finish", reason: "stop" },
    ],
  },
  {
    name: "pings before the first event and between blocks",
    wire: ev("ping") + start(3) + ev("ping") + textBlock(0, "a") + ev("ping") + end("max_tokens", 1),
    deltas: [
      { type: "usage", inputTokens: 3, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0, early: true },
      { type: "text", text: "a" },
      { type: "usage", inputTokens: 3, outputTokens: 1, cachedInputTokens: 0, reasoningTokens: 0 },
      { type: "finish", reason: "length" },
    ],
  },
  {
    name: "cache reads and writes count as input; a write total without a split is five-minute writes",
    wire: start(10, { cache_read_input_tokens: 100, cache_creation_input_tokens: 5 }) + textBlock(0, "x") + end("stop_sequence", 2),
    deltas: [
      { type: "usage", inputTokens: 115, outputTokens: 0, cachedInputTokens: 100, reasoningTokens: 0, cacheWrite5mTokens: 5, early: true },
      { type: "text", text: "x" },
      { type: "usage", inputTokens: 115, outputTokens: 2, cachedInputTokens: 100, reasoningTokens: 0, cacheWrite5mTokens: 5 },
      { type: "finish", reason: "stop" },
    ],
  },
  {
    name: "cache writes split by lifetime (cache_creation), reported at message_start and again, cumulative, at message_delta",
    wire:
      start(6, { cache_read_input_tokens: 0, cache_creation_input_tokens: 159_217, cache_creation: { ephemeral_5m_input_tokens: 159_000, ephemeral_1h_input_tokens: 217 } }) +
      textBlock(0, "x") +
      ev("message_delta", {
        delta: { stop_reason: "end_turn", stop_sequence: null },
        usage: { input_tokens: 6, output_tokens: 2745, cache_read_input_tokens: 0, cache_creation_input_tokens: 159_217, cache_creation: { ephemeral_5m_input_tokens: 159_000, ephemeral_1h_input_tokens: 217 } },
      }) +
      ev("message_stop"),
    deltas: [
      { type: "usage", inputTokens: 159_223, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0, cacheWrite5mTokens: 159_000, cacheWrite1hTokens: 217, early: true },
      { type: "text", text: "x" },
      { type: "usage", inputTokens: 159_223, outputTokens: 2745, cachedInputTokens: 0, reasoningTokens: 0, cacheWrite5mTokens: 159_000, cacheWrite1hTokens: 217 },
      { type: "finish", reason: "stop" },
    ],
  },
  {
    name: "a message_delta that repeats the write total without its split keeps the split message_start gave",
    wire:
      start(6, { cache_creation_input_tokens: 300, cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 } }) +
      textBlock(0, "x") +
      ev("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { input_tokens: 6, output_tokens: 3, cache_read_input_tokens: 0, cache_creation_input_tokens: 300 } }) +
      ev("message_stop"),
    deltas: [
      { type: "usage", inputTokens: 306, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0, cacheWrite5mTokens: 100, cacheWrite1hTokens: 200, early: true },
      { type: "text", text: "x" },
      { type: "usage", inputTokens: 306, outputTokens: 3, cachedInputTokens: 0, reasoningTokens: 0, cacheWrite5mTokens: 100, cacheWrite1hTokens: 200 },
      { type: "finish", reason: "stop" },
    ],
  },
  {
    name: "a stop sequence is named with the finish",
    wire: start(4) + textBlock(0, "1, 2") + end("stop_sequence", 3, ", 3"),
    deltas: [
      { type: "usage", inputTokens: 4, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0, early: true },
      { type: "text", text: "1, 2" },
      { type: "usage", inputTokens: 4, outputTokens: 3, cachedInputTokens: 0, reasoningTokens: 0 },
      { type: "finish", reason: "stop", stopSequence: ", 3" },
    ],
  },
  {
    name: "redacted thinking travels as data to replay; refusal; unknown block and event types",
    wire:
      start() +
      ev("content_block_start", { index: 0, content_block: { type: "redacted_thinking", data: "xyz" } }) +
      ev("content_block_stop", { index: 0 }) +
      ev("content_block_start", { index: 1, content_block: { type: "some_future_block", id: "s1" } }) +
      ev("content_block_stop", { index: 1 }) +
      ev("some_future_event", { x: 1 }) +
      textBlock(2, "no") +
      end("refusal", 1),
    deltas: [
      { type: "usage", inputTokens: 25, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0, early: true },
      { type: "reasoning", text: "", redactedData: "xyz" },
      { type: "text", text: "no" },
      { type: "usage", inputTokens: 25, outputTokens: 1, cachedInputTokens: 0, reasoningTokens: 0 },
      { type: "finish", reason: "content_filter" },
    ],
  },
  {
    name: "a server tool's call (input streamed) and result are relayed whole; its searches are counted",
    wire:
      start() +
      ev("content_block_start", { index: 0, content_block: { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} } }) +
      ev("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: '{"query":' } }) +
      ev("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: '"sluice"}' } }) +
      ev("content_block_stop", { index: 0 }) +
      ev("content_block_start", { index: 1, content_block: { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [{ type: "web_search_result", url: "https://x.test", title: "X" }] } }) +
      ev("content_block_stop", { index: 1 }) +
      textBlock(2, "found") +
      ev("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: 4, server_tool_use: { web_search_requests: 1 } } }) +
      ev("message_stop", {}),
    deltas: [
      { type: "usage", inputTokens: 25, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0, early: true },
      { type: "hosted_item", origin: "anthropic", item: { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "sluice" } } },
      { type: "hosted_item", origin: "anthropic", item: { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [{ type: "web_search_result", url: "https://x.test", title: "X" }] } },
      { type: "text", text: "found" },
      { type: "usage", inputTokens: 25, outputTokens: 4, cachedInputTokens: 0, reasoningTokens: 0, webSearches: 1 },
      { type: "finish", reason: "stop" },
    ],
  },
];

describe("Anthropic stream translation", () => {
  fixtureTests(create, FIXTURES);

  it("an error event mid-stream (overloaded_error) → upstream_stream_error, after the deltas before it", () => {
    const translator = create();
    const wire = start() + textBlock(0, "partial") + ev("error", { error: { type: "overloaded_error", message: "Overloaded" } });
    expect(() => translateWire(() => translator, wire)).toThrow(expect.objectContaining({ code: "upstream_stream_error" }));
  });

  it("a stream cut before message_stop is incomplete", () => {
    expect(() => translate(start() + textBlock(0, "a"))).toThrow(expect.objectContaining({ code: "upstream_protocol" }));
  });

  it("an in-band error with a class maps to that class: rate limit, authentication", () => {
    const rate = start() + ev("error", { error: { type: "rate_limit_error", message: "slow down" } });
    expect(() => translate(rate)).toThrow(expect.objectContaining({ code: "upstream_rate_limited" }));
    const auth = start() + ev("error", { error: { type: "authentication_error", message: "bad key" } });
    expect(() => translate(auth)).toThrow(expect.objectContaining({ code: "upstream_auth" }));
  });

  it("a delta for a block that never started is malformed", () => {
    expect(() => translate(start() + ev("content_block_delta", { index: 4, delta: { type: "text_delta", text: "?" } }))).toThrow(expect.objectContaining({ code: "upstream_protocol", message: "provider up sent a malformed event" }));
  });
});
