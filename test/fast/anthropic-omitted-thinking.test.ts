import { describe, expect, it } from "vitest";
import type { ChatRequest } from "../../src/core/chat-request.js";
import { anthropicRequestBody } from "../../src/providers/anthropic/anthropic-request.js";

/**
 * Claude Code asks for thinking with `display: "omitted"`: Anthropic then
 * issues thinking blocks with empty text and a signature, and the client
 * sends them back so. They must reach Anthropic again (a tool turn with
 * thinking on must start with its thinking block); without `omitted`, an
 * empty signed part is no Anthropic thinking (a bare Gemini text
 * signature) and stays out.
 */

const turn = (display?: "omitted"): ChatRequest => ({
  model: "alias",
  messages: [
    { role: "user", content: [{ type: "text", text: "q" }] },
    { role: "assistant", content: [{ type: "reasoning", text: "", signature: "sig-1" }], toolCalls: [{ id: "toolu_1", name: "Bash", arguments: "{}" }] },
    { role: "tool", toolCallId: "toolu_1", content: [{ type: "text", text: "ok" }] },
  ],
  tools: [{ name: "Bash", description: "", parameters: { type: "object" } }],
  sampling: { stop: [], maxTokens: 8000 },
  metadata: { labels: {} },
  reasoning: { effort: "high", ...(display ? { display, includeReasoning: false } : {}) },
});

const assistantBlocks = (r: ChatRequest) => (anthropicRequestBody(r, "claude-opus-4-7").messages as Array<{ role: string; content: Array<{ type: string }> }>)[1]!.content;

describe("thinking with display omitted", () => {
  it("replays the empty signed thinking block first in the tool turn, and forwards display", () => {
    expect(assistantBlocks(turn("omitted"))[0]).toEqual({ type: "thinking", thinking: "", signature: "sig-1" });
    expect(anthropicRequestBody(turn("omitted"), "claude-opus-4-7").thinking).toEqual({ type: "adaptive", display: "omitted" });
  });

  it("without it, an empty signed part is left out as before", () => {
    expect(assistantBlocks(turn()).map((b) => b.type)).toEqual(["tool_use"]);
  });
});
