import type { ChatResult } from "../../core/aggregate.js";
import type { ChatMessage, ChatRequest, ContentPart, ToolChoice } from "../../core/chat-request.js";
import { messageText } from "../../core/chat-request.js";
import type { Usage } from "../../core/delta.js";
import { itemPrefix, type JsonObject } from "../../response-state/response-ids.js";
import type { StoredResponse, StoredStatus, TurnOrigin } from "../../response-state/stored-response.js";
import { assistantItems, inputItems } from "./stored-items.js";

/** What a gRPC call that asked for `store` keeps, beside its answer. */
export interface StoredCallFacts {
  /** The key id that made it (Principal.id), "" while authentication is off. */
  readonly owner: string;
  /** The request as the client sent it: its own messages, without the turns previous_response_id put before them. */
  readonly request: ChatRequest;
  readonly previousId?: string;
  /** Epoch seconds, when the call began. */
  readonly createdAt: number;
}

/** The answer as the assistant message that replays it: reasoning with its signatures first, then text and calls. */
export function answerMessage(result: ChatResult): ChatMessage {
  const content: ContentPart[] = [...result.reasoningParts];
  if (result.text !== "") content.push({ type: "text", text: result.text });
  return { role: "assistant", content, ...(result.toolCalls.length > 0 ? { toolCalls: result.toolCalls } : {}) };
}

/** Who issued the answer's signatures: a continuation sends them only to the same provider and model (stored-turns.ts). */
function answerOrigins(message: ChatMessage, at: number, result: ChatResult): TurnOrigin[] {
  const by = { provider: result.provider, model: result.model };
  const origins: TurnOrigin[] = [];
  message.content.forEach((part, j) => {
    if (part.type === "reasoning" && (part.signature !== undefined || part.redactedData !== undefined)) origins.push({ message: at, part: j, ...by });
  });
  message.toolCalls?.forEach((call, j) => {
    if (call.signature !== undefined) origins.push({ message: at, call: j, ...by });
  });
  return origins;
}

function statusOf(result: ChatResult): StoredStatus {
  return result.finishReason === "length" || result.finishReason === "content_filter" ? "incomplete" : "completed";
}

function usageOf(u: Usage): JsonObject {
  const written = (u.cacheWrite5mTokens ?? 0) + (u.cacheWrite1hTokens ?? 0);
  return {
    input_tokens: u.inputTokens,
    input_tokens_details: { cached_tokens: u.cachedInputTokens, cache_write_tokens: written, cache_write_5m_tokens: u.cacheWrite5mTokens ?? 0, cache_write_1h_tokens: u.cacheWrite1hTokens ?? 0 },
    output_tokens: u.outputTokens,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens },
    total_tokens: u.inputTokens + u.outputTokens,
    ...(u.estimated ? { estimated: true } : {}),
  };
}

function toolChoiceOf(choice: ToolChoice | undefined): unknown {
  switch (choice?.type) {
    case undefined:
    case "auto":
      return "auto";
    case "none":
    case "required":
      return choice.type;
    case "function":
      return { type: "function", name: choice.name };
    case "hosted":
      return { type: choice.tool };
  }
}

function textFormatOf(request: ChatRequest): JsonObject {
  const format = request.responseFormat;
  if (format?.type !== "json_schema") return { type: format?.type ?? "text" };
  return { type: "json_schema", name: format.name, ...(format.description === undefined ? {} : { description: format.description }), schema: format.schema, strict: format.strict ?? null };
}

/** The request's fields a `response` object repeats, in the Responses API's words (null where the request set none). */
function echoOf(request: ChatRequest): JsonObject {
  const system = request.messages.filter((m) => m.role === "system").map(messageText);
  return {
    instructions: system.length > 0 ? system.join("\n\n") : null,
    max_output_tokens: request.sampling.maxTokens ?? null,
    metadata: request.metadata.providerMetadata ?? {},
    parallel_tool_calls: request.parallelToolCalls ?? true,
    temperature: request.sampling.temperature ?? null,
    top_p: request.sampling.topP ?? null,
    tool_choice: toolChoiceOf(request.toolChoice),
    tools: request.tools.map((t) => ({ type: "function", name: t.name, description: t.description, parameters: t.parameters, strict: t.strict ?? null })),
    text: { format: textFormatOf(request) },
    reasoning: { effort: request.reasoning?.effort ?? null, summary: null },
    ...(request.serviceTier === undefined ? {} : { service_tier: request.serviceTier }),
  };
}

/** The answer's output items, ids `<prefix>_<response hex>_<n>` as the Responses edge numbers its own. */
function outputItems(responseId: string, answer: ChatMessage): JsonObject[] {
  const base = responseId.slice("resp_".length);
  return assistantItems(answer).map((item, n) => ({ id: `${itemPrefix(item.type)}_${base}_${n}`, ...item }));
}

/**
 * One finished gRPC answer as the store keeps it: the turn as canonical
 * messages (to continue it from any edge), the input items and the
 * response object in the Responses API's shape (to read it from any edge).
 */
export function storedRecord(facts: StoredCallFacts, result: ChatResult, completedAt: number): StoredResponse {
  const id = result.responseId;
  const own = facts.request.messages.filter((m) => m.role !== "system");
  const answer = answerMessage(result);
  const status = statusOf(result);
  const response: JsonObject = {
    id,
    object: "response",
    created_at: facts.createdAt,
    completed_at: completedAt,
    status,
    error: null,
    incomplete_details: status === "incomplete" ? { reason: result.finishReason === "length" ? "max_output_tokens" : "content_filter" } : null,
    model: facts.request.model,
    output: outputItems(id, answer),
    ...(result.usage ? { usage: usageOf(result.usage) } : {}),
    ...echoOf(facts.request),
    store: true,
    background: false,
    previous_response_id: facts.previousId ?? null,
    truncation: "disabled",
  };
  return {
    id,
    owner: facts.owner,
    ...(facts.previousId === undefined ? {} : { previousId: facts.previousId }),
    status,
    createdAt: facts.createdAt,
    input: inputItems(id, own),
    response,
    turn: { messages: [...own, answer], origins: answerOrigins(answer, own.length, result) },
  };
}
