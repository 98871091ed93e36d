import type { AnthropicThinking } from "../../config/schema.js";
import { type CacheMark, type ChatMessage, type ChatRequest, MIN_THINKING_BUDGET_TOKENS, messageText, type ReasoningEffort, type ToolChoice, type ToolDefinition } from "../../core/chat-request.js";
import { GatewayError } from "../../core/errors.js";
import { hasLogitBias, hasProviderMetadata, type OptionalParam } from "../../core/request-params.js";
import type { UpstreamRequest, UpstreamTarget } from "../provider.js";
import { withProviderOptions } from "../provider-options.js";
import { parseDataUrl, parseToolArguments } from "../tool-arguments.js";
import { withCacheBreakpoints, withinBreakpointLimit } from "./cache-breakpoints.js";
import { serverToolName, serverTools } from "./server-tools.js";
import { EFFORT_BUDGET_TOKENS, thinkingModeFor } from "./thinking-modes.js";

/** Anthropic requires max_tokens; this is used when the client sets none (on top of a thinking budget). */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;
export const ANTHROPIC_VERSION = "2023-06-01";

/** Our effort levels in Anthropic's `output_config.effort` words; `none` turns thinking off instead. */
const EFFORT: Record<Exclude<ReasoningEffort, "none">, string> = {
  minimal: "low",
  low: "low",
  medium: "medium",
  high: "high",
  xhigh: "max",
};

/** The caller's breakpoint as Anthropic's `cache_control`, spread into its block. */
function cacheControl(mark: CacheMark | undefined): Record<string, unknown> {
  return mark ? { cache_control: { type: "ephemeral", ...(mark.ttl ? { ttl: mark.ttl } : {}) } } : {};
}

/**
 * `omitted`: the caller asked for thinking without its text (Claude Code
 * does), so the signed blocks it sends back have empty text, as Anthropic
 * issued them, and are replayed as they are.
 */
function contentBlocks(m: ChatMessage, omitted: boolean): Array<Record<string, unknown>> {
  const blocks: Array<Record<string, unknown>> = [];
  for (const part of m.content) {
    if (part.type === "text") blocks.push({ type: "text", text: part.text, ...cacheControl(part.cache) });
    else if (part.type === "reasoning") {
      // Anthropic verifies a thinking block's signature against its text:
      // reasoning without both (another provider's, or a bare Gemini text
      // signature) cannot be replayed here and is left out.
      if (part.redactedData !== undefined) blocks.push({ type: "redacted_thinking", data: part.redactedData });
      else if (part.signature !== undefined && (part.text !== "" || omitted)) blocks.push({ type: "thinking", thinking: part.text, signature: part.signature });
    } else if (part.type === "hosted_item") {
      // Server tool blocks of an earlier turn; other origins' items were dropped by name before (providers/hosted-tools.ts).
      if (part.origin === "anthropic") blocks.push({ ...part.item });
    } else {
      const data = parseDataUrl(part.url);
      blocks.push(data ? { type: "image", source: { type: "base64", media_type: data.mediaType, data: data.data }, ...cacheControl(part.cache) } : { type: "image", source: { type: "url", url: part.url }, ...cacheControl(part.cache) });
    }
  }
  return blocks;
}

function message(m: ChatMessage, i: number, omitted: boolean): Record<string, unknown> {
  if (m.role === "tool") {
    return {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: m.toolCallId, content: messageText(m), ...(m.isError ? { is_error: true } : {}), ...cacheControl(m.cache) }],
    };
  }
  const blocks = contentBlocks(m, omitted);
  (m.toolCalls ?? []).forEach((call, j) => {
    blocks.push({
      type: "tool_use",
      id: call.id,
      name: call.name,
      input: parseToolArguments(call.arguments, `messages[${i}].tool_calls[${j}].arguments`),
      ...cacheControl(call.cache),
    });
  });
  return { role: m.role === "assistant" ? "assistant" : "user", content: blocks };
}

function toolChoice(choice: ToolChoice | undefined, parallel: boolean | undefined, request: ChatRequest): Record<string, unknown> | undefined {
  const noParallel = parallel === false ? { disable_parallel_tool_use: true } : {};
  switch (choice?.type) {
    case undefined:
      return parallel === false ? { type: "auto", ...noParallel } : undefined;
    case "auto":
      return { type: "auto", ...noParallel };
    case "none":
      return { type: "none" };
    case "required":
      return { type: "any", ...noParallel };
    case "function":
      return { type: "tool", name: choice.name, ...noParallel };
    case "hosted":
      return { type: "tool", name: serverToolName(request, choice.tool), ...noParallel };
  }
}

/**
 * Messages API has no seed, penalties, logit bias, logprobs or request
 * metadata beyond user_id, no JSON mode without a schema, and two service
 * tiers (auto, standard_only).
 */
export function anthropicUnsupportedParams(request: ChatRequest): OptionalParam[] {
  const s = request.sampling;
  const out: OptionalParam[] = [];
  if (request.responseFormat?.type === "json_object") out.push("response_format");
  if (s.seed !== undefined) out.push("sampling.seed");
  if (s.presencePenalty !== undefined) out.push("sampling.presence_penalty");
  if (s.frequencyPenalty !== undefined) out.push("sampling.frequency_penalty");
  if (hasLogitBias(request)) out.push("sampling.logit_bias");
  if (request.logprobs) out.push("logprobs");
  if (request.serviceTier !== undefined && request.serviceTier !== "auto" && request.serviceTier !== "default") out.push("service_tier");
  if (hasProviderMetadata(request)) out.push("metadata.provider_metadata");
  return out;
}

/** What the request's reasoning asks of one model. */
interface Thinking {
  readonly thinking?: Record<string, unknown>;
  /** The `output_config.effort` word, when this model is to get one. */
  readonly effort?: string;
  /** Thinking tokens inside max_tokens (0: none), so an unset max_tokens still leaves room for the answer. */
  readonly budget: number;
}

/**
 * A budget for an effort on a budget-form model, within the caller's
 * max_tokens (thinking and answer share it): at most half of it, so the
 * answer keeps room, and never under Anthropic's floor. A max_tokens too
 * small for the floor fails the request naming it: raising a limit the
 * caller set would spend tokens they capped.
 */
function effortBudget(wanted: number, maxTokens: number | undefined): number {
  if (maxTokens === undefined) return wanted;
  if (maxTokens > MIN_THINKING_BUDGET_TOKENS) return Math.min(wanted, Math.max(MIN_THINKING_BUDGET_TOKENS, Math.floor(maxTokens / 2)));
  throw new GatewayError(
    "invalid_request",
    `sampling.max_tokens: must be above ${MIN_THINKING_BUDGET_TOKENS} with a reasoning effort on this model, which thinks within max_tokens on a budget of at least ${MIN_THINKING_BUDGET_TOKENS} tokens`,
    { field: "sampling.max_tokens" },
  );
}

/**
 * The request's reasoning in the form `mode` names (thinking-modes.ts).
 * An effort is `thinking: adaptive` + `output_config.effort` on an
 * adaptive model, and `thinking: enabled` with `budget_tokens` from
 * EFFORT_BUDGET_TOKENS on a budget one, without the effort word (of those
 * models only Opus 4.5 takes it; the others refuse it). An explicit budget
 * is sent as given on either (it then stands for the effort on a budget
 * model); `none` turns thinking off.
 */
function thinkingFor(request: ChatRequest, mode: AnthropicThinking): Thinking {
  const chosen = thinkingForm(request, mode);
  const display = request.reasoning?.display;
  // The caller's display goes with the thinking it asked for (never with disabled).
  if (display === undefined || chosen.thinking === undefined || chosen.thinking.type === "disabled") return chosen;
  return { ...chosen, thinking: { ...chosen.thinking, display } };
}

function thinkingForm(request: ChatRequest, mode: AnthropicThinking): Thinking {
  const r = request.reasoning;
  const effort = r?.effort === "none" ? undefined : r?.effort;
  const word = effort !== undefined && mode === "adaptive" ? { effort: EFFORT[effort] } : {};
  if (r?.budgetTokens !== undefined) return { thinking: { type: "enabled", budget_tokens: r.budgetTokens }, budget: r.budgetTokens, ...word };
  if (r?.effort === "none") return { thinking: { type: "disabled" }, budget: 0 };
  if (effort === undefined) return { budget: 0 };
  if (mode === "adaptive") return { thinking: { type: "adaptive" }, budget: 0, ...word };
  const budget = effortBudget(EFFORT_BUDGET_TOKENS[effort], request.sampling.maxTokens);
  return { thinking: { type: "enabled", budget_tokens: budget }, budget };
}

/** `thinking` and `output_config` for the request's reasoning and response format; only what was asked for. */
function reasoningFields(request: ChatRequest, thinking: Thinking): Record<string, unknown> {
  const format = request.responseFormat?.type === "json_schema" ? { type: "json_schema", schema: request.responseFormat.schema } : undefined;
  const outputConfig = {
    ...(format ? { format } : {}),
    ...(thinking.effort !== undefined ? { effort: thinking.effort } : {}),
  };
  return {
    ...(thinking.thinking ? { thinking: thinking.thinking } : {}),
    ...(Object.keys(outputConfig).length > 0 ? { output_config: outputConfig } : {}),
  };
}

/**
 * Messages API body: system prompts lifted out of the conversation, tools
 * and choices translated, reasoning in the form `mode` names (by default
 * the one the model-name table gives).
 */
/**
 * The system prompt: one string as before, or, when the caller marked a
 * breakpoint in it, text blocks (one per system message part) so the mark
 * stays on the block it was placed on.
 */
function systemPrompt(request: ChatRequest): string | Array<Record<string, unknown>> {
  const system = request.messages.filter((m) => m.role === "system");
  if (!system.some((m) => m.content.some((p) => p.type === "text" && p.cache !== undefined))) return system.map(messageText).join("\n\n");
  return system.flatMap((m) => m.content.flatMap((p) => (p.type === "text" && p.text !== "" ? [{ type: "text", text: p.text, ...cacheControl(p.cache) }] : [])));
}

function tool(t: ToolDefinition): Record<string, unknown> {
  return {
    name: t.name,
    ...(t.description ? { description: t.description } : {}),
    input_schema: t.parameters,
    ...(t.strict === undefined ? {} : { strict: t.strict }),
    ...(t.deferLoading === undefined ? {} : { defer_loading: t.deferLoading }),
    ...(t.eagerInputStreaming === undefined ? {} : { eager_input_streaming: t.eagerInputStreaming }),
    ...cacheControl(t.cache),
  };
}

export function anthropicRequestBody(request: ChatRequest, model: string, mode: AnthropicThinking = thinkingModeFor(model)): Record<string, unknown> {
  const s = request.sampling;
  const system = systemPrompt(request);
  const messages = request.messages
    .map((m, i) => [m, i] as const)
    .filter(([m]) => m.role !== "system")
    .map(([m, i]) => message(m, i, request.reasoning?.display === "omitted"));
  const thinking = thinkingFor(request, mode);
  const server = serverTools(request);
  const choice = request.tools.length > 0 || server.length > 0 || request.toolChoice ? toolChoice(request.toolChoice, request.parallelToolCalls, request) : undefined;
  const body = {
    model,
    // budget_tokens must stay below max_tokens: an unset limit leaves the usual room for the answer.
    max_tokens: s.maxTokens ?? thinking.budget + ANTHROPIC_DEFAULT_MAX_TOKENS,
    stream: true,
    ...(system.length > 0 ? { system } : {}),
    messages,
    ...(request.tools.length > 0 || server.length > 0 ? { tools: [...request.tools.map(tool), ...server] } : {}),
    ...(choice ? { tool_choice: choice } : {}),
    ...reasoningFields(request, thinking),
    ...(s.temperature === undefined ? {} : { temperature: s.temperature }),
    ...(s.topP === undefined ? {} : { top_p: s.topP }),
    ...(s.topK === undefined ? {} : { top_k: s.topK }),
    ...(s.stop.length > 0 ? { stop_sequences: s.stop } : {}),
    ...(request.serviceTier === "auto" ? { service_tier: "auto" } : request.serviceTier === "default" ? { service_tier: "standard_only" } : {}),
    ...(request.metadata.userId ? { metadata: { user_id: request.metadata.userId } } : {}),
    ...(request.carried?.contextManagement ? { context_management: request.carried.contextManagement } : {}),
  };
  return withProviderOptions(body, request, "anthropic");
}

/** The Messages body as sent: cache breakpoints placed (`promptCache: auto`) or kept within the limit. */
export function anthropicWireBody(request: ChatRequest, target: UpstreamTarget): Record<string, unknown> {
  const body = anthropicRequestBody(request, target.model, target.thinking ?? thinkingModeFor(target.model));
  return target.promptCache === "auto" ? withCacheBreakpoints(body) : withinBreakpointLimit(body);
}

/** The headers every Anthropic wire sends: JSON in, events out, and the betas the caller asked for. */
export function anthropicStreamHeaders(request: ChatRequest): Record<string, string> {
  const betas = request.carried?.anthropicBetas ?? [];
  return { "content-type": "application/json", accept: "text/event-stream", ...(betas.length > 0 ? { "anthropic-beta": betas.join(",") } : {}) };
}

export function buildAnthropicRequest(request: ChatRequest, target: UpstreamTarget): UpstreamRequest {
  const key = target.provider.apiKey;
  return {
    url: `${target.provider.baseUrl}/messages`,
    headers: { ...anthropicStreamHeaders(request), "anthropic-version": ANTHROPIC_VERSION, ...(key ? { "x-api-key": key.reveal() } : {}) },
    body: JSON.stringify(anthropicWireBody(request, target)),
  };
}
