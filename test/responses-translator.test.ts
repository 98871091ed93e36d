import { describe, expect, it } from "vitest";
import { createResponsesTranslator } from "../src/providers/openai-responses/responses-translator.js";
import { expectSplitInvariance, type Fixture, testTarget, translateWire } from "./helpers/translate.js";

const target = testTarget("openai-responses");
const create = () => createResponsesTranslator(target);
const ev = (type: string, data: Record<string, unknown> = {}) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const completed = (usage: Record<string, unknown>, type = "response.completed", extra: Record<string, unknown> = {}) =>
  ev(type, { response: { id: "resp_1", status: type === "response.completed" ? "completed" : "incomplete", output: [], usage, ...extra } });
const USAGE = { input_tokens: 30, output_tokens: 9, input_tokens_details: { cached_tokens: 10 }, output_tokens_details: { reasoning_tokens: 4 } };

const FIXTURES: Fixture[] = [
  {
    name: "reasoning with encrypted content, text, a custom tool call and a namespaced function call",
    wire:
      ev("response.created", { response: { id: "resp_1", status: "in_progress", output: [] } }) +
      ev("response.output_item.added", { output_index: 0, item: { type: "reasoning", id: "rs_1", summary: [] } }) +
      ev("response.reasoning_summary_text.delta", { output_index: 0, delta: "think" }) +
      ev("response.output_item.done", { output_index: 0, item: { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "gAAA-enc" } }) +
      ev("response.output_item.added", { output_index: 1, item: { type: "message", id: "msg_1", content: [] } }) +
      ev("response.output_text.delta", { output_index: 1, delta: "Hi" }) +
      ev("response.output_item.added", { output_index: 2, item: { type: "custom_tool_call", id: "ctc_1", call_id: "call_1", name: "apply_patch", input: "" } }) +
      ev("response.custom_tool_call_input.delta", { output_index: 2, delta: 'a "b"\n' }) +
      ev("response.output_item.done", { output_index: 2, item: { type: "custom_tool_call", id: "ctc_1", call_id: "call_1", name: "apply_patch", input: 'a "b"\n' } }) +
      ev("response.output_item.added", { output_index: 3, item: { type: "function_call", id: "fc_1", call_id: "call_2", name: "spawn", namespace: "multi_agent_v1", arguments: "" } }) +
      ev("response.function_call_arguments.delta", { output_index: 3, delta: "{}" }) +
      completed(USAGE),
    deltas: [
      { type: "reasoning", text: "think" },
      { type: "reasoning", text: "", signature: "gAAA-enc" },
      { type: "text", text: "Hi" },
      { type: "tool_call", index: 0, id: "call_1", name: "apply_patch", arguments: '{"input":"' },
      { type: "tool_call", index: 0, arguments: 'a \\"b\\"\\n' },
      { type: "tool_call", index: 0, arguments: '"}' },
      { type: "tool_call", index: 1, id: "call_2", name: "multi_agent_v1__spawn", arguments: "" },
      { type: "tool_call", index: 1, arguments: "{}" },
      { type: "usage", inputTokens: 30, outputTokens: 9, cachedInputTokens: 10, reasoningTokens: 4 },
      { type: "finish", reason: "tool_calls" },
    ],
  },
  {
    name: "a hosted web search is relayed whole and counted; an incomplete response ends at the length limit",
    wire:
      ev("response.output_item.added", { output_index: 0, item: { type: "web_search_call", id: "ws_1", status: "in_progress" } }) +
      ev("response.output_item.done", { output_index: 0, item: { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "q" } } }) +
      ev("response.output_text.delta", { output_index: 1, delta: "found" }) +
      completed(USAGE, "response.incomplete", { incomplete_details: { reason: "max_output_tokens" } }),
    deltas: [
      { type: "hosted_item", origin: "openai", item: { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "q" } } },
      { type: "text", text: "found" },
      { type: "usage", inputTokens: 30, outputTokens: 9, cachedInputTokens: 10, reasoningTokens: 4, webSearches: 1 },
      { type: "finish", reason: "length" },
    ],
  },
];

describe("Responses stream translation", () => {
  for (const f of FIXTURES) {
    it(f.name, () => {
      expect(translateWire(create, f.wire)).toEqual(f.deltas);
    });
  }

  it("gives identical deltas for every fixture split at every byte offset", () => {
    expectSplitInvariance(create, FIXTURES);
  });

  it("a custom tool's text comes back whole from the canonical arguments", () => {
    const args = translateWire(create, FIXTURES[0]!.wire)
      .filter((d) => d.type === "tool_call" && d.index === 0)
      .map((d) => (d.type === "tool_call" ? d.arguments : ""))
      .join("");
    expect(JSON.parse(args)).toEqual({ input: 'a "b"\n' });
  });

  it("an error event or response.failed mid-stream fails the stream with its class", () => {
    expect(() => translateWire(create, ev("response.output_text.delta", { delta: "x" }) + ev("error", { code: "rate_limit_exceeded", message: "slow down" }))).toThrow(expect.objectContaining({ code: "upstream_rate_limited" }));
    expect(() => translateWire(create, ev("response.failed", { response: { status: "failed", error: { code: "server_error" } } }))).toThrow(expect.objectContaining({ code: "upstream_stream_error" }));
  });

  it("a stream that ends before the response completes is an error, not a short answer", () => {
    expect(() => translateWire(create, ev("response.output_text.delta", { delta: "x" }))).toThrow(expect.objectContaining({ code: "upstream_protocol" }));
  });
});
