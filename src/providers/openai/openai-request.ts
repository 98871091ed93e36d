import { type ChatMessage, type ChatRequest, messageText, type ProviderKind, type ResponseFormat, type ToolChoice } from "../../core/chat-request.js";
import { hasToolErrors, type OptionalParam } from "../../core/request-params.js";
import type { UpstreamRequest, UpstreamTarget } from "../provider.js";
import { withProviderOptions } from "../provider-options.js";
import { quirksOf, rejectedParams, withQuirks } from "./preset-quirks.js";

function content(message: ChatMessage): unknown {
  // Chat Completions has no input field for earlier reasoning: replayed reasoning parts are not sent.
  // Nor for hosted tools' items, which only their own provider takes back (providers/hosted-tools.ts drops them first, by name).
  const parts = message.content.filter((part) => part.type === "text" || part.type === "image_url");
  if (parts.every((part) => part.type === "text")) return messageText(message);
  return parts.map((part) => (part.type === "text" ? { type: "text", text: part.text } : { type: "image_url", image_url: { url: part.url, ...(part.detail ? { detail: part.detail } : {}) } }));
}

function message(m: ChatMessage): Record<string, unknown> {
  const base = m.name ? { name: m.name } : {};
  switch (m.role) {
    case "tool":
      return { role: "tool", tool_call_id: m.toolCallId, content: messageText(m) };
    case "assistant": {
      const calls = m.toolCalls ?? [];
      const visible = m.content.some((part) => part.type !== "reasoning");
      return {
        role: "assistant",
        ...base,
        content: !visible && calls.length > 0 ? null : content(m),
        ...(calls.length > 0 ? { tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) } : {}),
      };
    }
    default:
      return { role: m.role, ...base, content: content(m) };
  }
}

function toolChoice(choice: ToolChoice): unknown {
  return choice.type === "function" ? { type: "function", function: { name: choice.name } } : choice.type;
}

function responseFormat(format: ResponseFormat): Record<string, unknown> {
  if (format.type !== "json_schema") return { type: format.type };
  return {
    type: "json_schema",
    json_schema: {
      name: format.name,
      ...(format.description ? { description: format.description } : {}),
      schema: format.schema,
      ...(format.strict === undefined ? {} : { strict: format.strict }),
    },
  };
}

/**
 * Chat Completions has every optional parameter except a thinking budget,
 * top-k sampling and failed tool results; a preset's cloud may refuse more.
 */
export function openAiUnsupportedParams(request: ChatRequest, target?: UpstreamTarget): OptionalParam[] {
  const out: OptionalParam[] = [];
  if (request.reasoning?.budgetTokens !== undefined) out.push("reasoning.budget_tokens");
  if (request.sampling.topK !== undefined) out.push("sampling.top_k");
  if (hasToolErrors(request)) out.push("messages.is_error");
  const quirks = target && quirksOf(target);
  if (target && quirks?.rejects) out.push(...rejectedParams(openAiRequestBody(request, target.model), quirks));
  return out;
}

/**
 * The Chat Completions request body; always streaming, always asking for
 * usage. Each optional field is sent only when the caller set it, so a model
 * that rejects one (reasoning_effort on a non-reasoning model) never sees it.
 * The token limit goes out as max_completion_tokens: OpenAI's reasoning
 * models reject max_tokens.
 */
export function openAiRequestBody(request: ChatRequest, model: string, kind: ProviderKind = "openai"): Record<string, unknown> {
  const s = request.sampling;
  const bias = s.logitBias ?? {};
  const metadata = request.metadata.providerMetadata ?? {};
  const body = {
    model,
    messages: request.messages.map(message),
    stream: true,
    stream_options: { include_usage: true },
    ...(request.tools.length > 0
      ? {
          tools: request.tools.map((t) => ({
            type: "function",
            function: {
              name: t.name,
              ...(t.description ? { description: t.description } : {}),
              parameters: t.parameters,
              ...(t.strict === undefined ? {} : { strict: t.strict }),
            },
          })),
        }
      : {}),
    ...(request.toolChoice ? { tool_choice: toolChoice(request.toolChoice) } : {}),
    ...(request.parallelToolCalls === undefined ? {} : { parallel_tool_calls: request.parallelToolCalls }),
    ...(request.responseFormat ? { response_format: responseFormat(request.responseFormat) } : {}),
    ...(request.reasoning?.effort ? { reasoning_effort: request.reasoning.effort } : {}),
    ...(s.temperature === undefined ? {} : { temperature: s.temperature }),
    ...(s.topP === undefined ? {} : { top_p: s.topP }),
    ...(s.maxTokens === undefined ? {} : { max_completion_tokens: s.maxTokens }),
    ...(s.stop.length > 0 ? { stop: s.stop } : {}),
    ...(s.seed === undefined ? {} : { seed: s.seed }),
    ...(s.presencePenalty === undefined ? {} : { presence_penalty: s.presencePenalty }),
    ...(s.frequencyPenalty === undefined ? {} : { frequency_penalty: s.frequencyPenalty }),
    ...(Object.keys(bias).length > 0 ? { logit_bias: bias } : {}),
    ...(request.logprobs ? { logprobs: true, ...(request.logprobs.topLogprobs === undefined ? {} : { top_logprobs: request.logprobs.topLogprobs }) } : {}),
    ...(request.serviceTier ? { service_tier: request.serviceTier } : {}),
    ...(request.metadata.userId ? { user: request.metadata.userId } : {}),
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
    ...(request.carried?.promptCacheKey ? { prompt_cache_key: request.carried.promptCacheKey } : {}),
    ...(request.carried?.safetyIdentifier ? { safety_identifier: request.carried.safetyIdentifier } : {}),
  };
  return withProviderOptions(body, request, kind);
}

export function buildOpenAiRequest(request: ChatRequest, target: UpstreamTarget): UpstreamRequest {
  const key = target.provider.apiKey;
  return {
    url: `${target.provider.baseUrl}/chat/completions`,
    headers: {
      "content-type": "application/json",
      accept: "text/event-stream",
      ...(key ? { authorization: `Bearer ${key.reveal()}` } : {}),
    },
    body: JSON.stringify(withQuirks(openAiRequestBody(request, target.model), quirksOf(target))),
  };
}
