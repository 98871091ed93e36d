import type { ChatResult } from "../../core/aggregate.js";
import type { ReasoningPart, ToolCall } from "../../core/chat-request.js";
import type { FinishReason, Usage } from "../../core/delta.js";
import { GatewayError } from "../../core/errors.js";

/**
 * The pieces of an Anthropic `message` object that the stream encoder and
 * the non-streaming answer share, so that what the SDK assembles from the
 * stream and what it receives whole are the same object.
 */

/** The stop reasons Sluice can give (Anthropic also has pause_turn and model_context_window_exceeded). */
export type StopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use" | "refusal";

/** The message id for a response: `msg_` and the pipeline's response id, which it still contains. */
export function messageId(responseId: string): string {
  return `msg_${responseId}`;
}

/** Our finish reasons in Anthropic's words; the ones it has no word for end the turn. */
export function stopReason(reason: FinishReason, stopSequence: string | undefined): StopReason {
  switch (reason) {
    case "stop":
      return stopSequence === undefined ? "end_turn" : "stop_sequence";
    case "length":
      return "max_tokens";
    case "tool_calls":
      return "tool_use";
    case "content_filter":
      return "refusal";
    case "other":
    case "unspecified":
      return "end_turn";
  }
}

/** `usage` of a message and of message_delta. */
export interface AnthropicUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly cache_creation_input_tokens: number;
  readonly cache_read_input_tokens: number;
  /** cache_creation_input_tokens by lifetime. */
  readonly cache_creation: { readonly ephemeral_5m_input_tokens: number; readonly ephemeral_1h_input_tokens: number };
  readonly output_tokens_details?: { readonly thinking_tokens: number };
}

/** Usage before anything is known: message_start comes first, the counts with message_delta. */
export const UNKNOWN_USAGE: AnthropicUsage = {
  input_tokens: 0,
  output_tokens: 0,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
};

/**
 * Our usage in Anthropic's fields, integers always (clients add them up;
 * a null beside a 0 broke their sums). Our input count includes cache reads
 * and writes; Anthropic's input_tokens excludes both, as here: reads go to
 * cache_read_input_tokens, writes to cache_creation_input_tokens and their
 * split by lifetime to cache_creation. The three input fields add up to
 * every input token (docs/streams.md). Providers that report no writes
 * (OpenAI, Gemini) give 0 there.
 */
export function anthropicUsage(usage: Usage | undefined): AnthropicUsage {
  if (!usage) return { ...UNKNOWN_USAGE };
  const written5m = usage.cacheWrite5mTokens ?? 0;
  const written1h = usage.cacheWrite1hTokens ?? 0;
  return {
    input_tokens: Math.max(0, usage.inputTokens - usage.cachedInputTokens - written5m - written1h),
    output_tokens: usage.outputTokens,
    cache_creation_input_tokens: written5m + written1h,
    cache_read_input_tokens: usage.cachedInputTokens,
    cache_creation: { ephemeral_5m_input_tokens: written5m, ephemeral_1h_input_tokens: written1h },
    ...(usage.reasoningTokens > 0 ? { output_tokens_details: { thinking_tokens: usage.reasoningTokens } } : {}),
  };
}

/** The response content blocks Sluice produces. */
export type ContentBlock =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "thinking"; readonly thinking: string; readonly signature: string }
  | { readonly type: "redacted_thinking"; readonly data: string }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: Record<string, unknown> }
  /** A server tool's block (`server_tool_use`, `web_search_tool_result`, …) from an Anthropic upstream, as it came. */
  | ServerToolBlock;

export interface ServerToolBlock {
  readonly type: string;
  readonly [field: string]: unknown;
}

function reasoningBlock(part: ReasoningPart): ContentBlock {
  if (part.redactedData !== undefined) return { type: "redacted_thinking", data: part.redactedData };
  return { type: "thinking", thinking: part.text, signature: part.signature ?? "" };
}

function toolUseBlock(call: ToolCall, provider: string): ContentBlock {
  let input: unknown = {};
  if (call.arguments.trim() !== "") {
    try {
      input = JSON.parse(call.arguments);
    } catch {
      input = undefined;
    }
  }
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    // Anthropic's tool_use input is an object; text that is none cannot be passed on as one.
    throw new GatewayError("upstream_protocol", `provider ${provider} sent tool arguments that are not a JSON object`, { provider });
  }
  return { type: "tool_use", id: call.id, name: call.name, input: input as Record<string, unknown> };
}

/** A Messages API `message` object, as returned whole and as message_start carries it (empty). */
export interface AnthropicMessage {
  readonly id: string;
  readonly type: "message";
  readonly role: "assistant";
  readonly model: string;
  readonly content: readonly ContentBlock[];
  readonly stop_reason: StopReason | null;
  readonly stop_sequence: string | null;
  readonly usage: AnthropicUsage;
}

/**
 * A whole answer as a Messages API `message`, named by the alias the caller
 * asked for (`requestModel`), not the provider's model. A ChatResult keeps
 * text, reasoning and tool calls apart, so blocks come in the order Claude
 * writes them: thinking (and redacted thinking), text, tool uses.
 * Throws `upstream_protocol` when a tool call's arguments are not a JSON
 * object, which the `input` field cannot carry.
 */
export function messageFromResult(result: ChatResult, requestModel: string): AnthropicMessage {
  const content: ContentBlock[] = result.reasoningParts.map(reasoningBlock);
  if (result.text !== "") content.push({ type: "text", text: result.text });
  for (const call of result.toolCalls) content.push(toolUseBlock(call, result.provider));
  return {
    id: messageId(result.responseId),
    type: "message",
    role: "assistant",
    model: requestModel,
    content,
    stop_reason: stopReason(result.finishReason, result.stopSequence),
    stop_sequence: result.stopSequence ?? null,
    usage: anthropicUsage(result.usage),
  };
}
