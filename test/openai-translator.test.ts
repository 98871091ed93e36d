import { describe, expect, it } from "vitest";
import { GatewayError } from "../src/core/errors.js";
import { createOpenAiTranslator } from "../src/providers/openai/openai-translator.js";
import { type Fixture, fixtureTests, testTarget, translateWire } from "./helpers/translate.js";

const target = testTarget("openai");
const translate = (wire: string) => translateWire(() => createOpenAiTranslator(target), wire);

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const usage = (prompt: number, completion: number, extra: Record<string, unknown> = {}) => `data: ${JSON.stringify({ id: "c", choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, ...extra } })}\n\n`;
const DONE = "data: [DONE]\n\n";

const FIXTURES: Fixture[] = [
  {
    name: "text with usage at the end",
    wire: chunk({ role: "assistant", content: "" }) + chunk({ content: "Hel" }) + chunk({ content: "lo" }) + chunk({}, "stop") + usage(5, 2) + DONE,
    deltas: [
      { type: "text", text: "Hel" },
      { type: "text", text: "lo" },
      { type: "usage", inputTokens: 5, outputTokens: 2, cachedInputTokens: 0, reasoningTokens: 0 },
      { type: "finish", reason: "stop" },
    ],
  },
  {
    name: "reasoning then text (reasoning_content and reasoning spellings)",
    wire: chunk({ reasoning_content: "think " }) + chunk({ reasoning: "more" }) + chunk({ content: "answer" }) + chunk({}, "stop") + DONE,
    deltas: [
      { type: "reasoning", text: "think " },
      { type: "reasoning", text: "more" },
      { type: "text", text: "answer" },
      { type: "finish", reason: "stop" },
    ],
  },
  {
    name: "parallel tool calls interleaved with text",
    wire:
      chunk({ content: "Let me check." }) +
      chunk({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "weather", arguments: "" } }] }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }) +
      chunk({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "time", arguments: "{}" } }] }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }) +
      chunk({}, "tool_calls") +
      usage(10, 20, { prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 3 } }) +
      DONE,
    deltas: [
      { type: "text", text: "Let me check." },
      { type: "tool_call", index: 0, id: "call_a", name: "weather", arguments: "" },
      { type: "tool_call", index: 0, arguments: '{"city":' },
      { type: "tool_call", index: 1, id: "call_b", name: "time", arguments: "{}" },
      { type: "tool_call", index: 0, arguments: '"Oslo"}' },
      { type: "usage", inputTokens: 10, outputTokens: 20, cachedInputTokens: 4, reasoningTokens: 3 },
      { type: "finish", reason: "tool_calls" },
    ],
  },
  {
    name: "usage in the finish chunk, no [DONE]",
    wire: `${chunk({ content: "x" })}data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "length" }], usage: { prompt_tokens: 1, completion_tokens: 1 } })}\n\n`,
    deltas: [
      { type: "text", text: "x" },
      { type: "usage", inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, reasoningTokens: 0 },
      { type: "finish", reason: "length" },
    ],
  },
  {
    name: "pings and comments before the first event",
    wire: `: ping\n\n: keepalive\n${chunk({ content: "a" })}${chunk({}, "content_filter")}${DONE}`,
    deltas: [
      { type: "text", text: "a" },
      { type: "finish", reason: "content_filter" },
    ],
  },
  {
    name: "unknown finish reason",
    wire: chunk({ content: "a" }) + chunk({}, "something_new") + DONE,
    deltas: [
      { type: "text", text: "a" },
      { type: "finish", reason: "other" },
    ],
  },
  {
    name: "events after [DONE] are ignored",
    wire: chunk({ content: "a" }) + chunk({}, "stop") + DONE + chunk({ content: "late" }),
    deltas: [
      { type: "text", text: "a" },
      { type: "finish", reason: "stop" },
    ],
  },
];

describe("OpenAI stream translation", () => {
  fixtureTests(() => createOpenAiTranslator(target), FIXTURES);

  it("rejects a malformed event without echoing it", () => {
    const error = (() => {
      try {
        translate(`${chunk({ content: "a" })}data: {"choices": [sk-secret-looking\n\n`);
      } catch (e) {
        return e as GatewayError;
      }
    })();
    expect(error).toBeInstanceOf(GatewayError);
    expect(error!.code).toBe("upstream_protocol");
    expect(error!.message).toBe("provider up sent a malformed event");
  });

  it("turns an in-band error event into upstream_stream_error", () => {
    expect(() => translate(`${chunk({ content: "a" })}data: {"error":{"message":"boom","type":"server_error"}}\n\n`)).toThrow(expect.objectContaining({ code: "upstream_stream_error", message: "provider up reported an error mid-stream" }));
  });

  it("rejects a stream that ends without finish or [DONE]", () => {
    expect(() => translate(chunk({ content: "a" }))).toThrow(expect.objectContaining({ code: "upstream_protocol" }));
  });

  it("rejects a JSON value that is not an object", () => {
    expect(() => translate("data: 42\n\n")).toThrow(expect.objectContaining({ code: "upstream_protocol" }));
  });
});
