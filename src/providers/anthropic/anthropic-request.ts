import { type ChatMessage, type ChatRequest, messageText, type ToolChoice } from "../../core/chat-request.js";
import type { UpstreamRequest, UpstreamTarget } from "../provider.js";
import { parseDataUrl, parseToolArguments } from "../tool-arguments.js";

/** Anthropic requires max_tokens; this is used when the client sets none. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;
export const ANTHROPIC_VERSION = "2023-06-01";

function contentBlocks(m: ChatMessage): Array<Record<string, unknown>> {
  return m.content.map((part) => {
    if (part.type === "text") return { type: "text", text: part.text };
    const data = parseDataUrl(part.url);
    return data
      ? { type: "image", source: { type: "base64", media_type: data.mediaType, data: data.data } }
      : { type: "image", source: { type: "url", url: part.url } };
  });
}

function message(m: ChatMessage, i: number): Record<string, unknown> {
  if (m.role === "tool") {
    return { role: "user", content: [{ type: "tool_result", tool_use_id: m.toolCallId, content: messageText(m) }] };
  }
  const blocks = contentBlocks(m);
  (m.toolCalls ?? []).forEach((call, j) => {
    blocks.push({ type: "tool_use", id: call.id, name: call.name, input: parseToolArguments(call.arguments, `messages[${i}].tool_calls[${j}].arguments`) });
  });
  return { role: m.role === "assistant" ? "assistant" : "user", content: blocks };
}

function toolChoice(choice: ToolChoice): Record<string, unknown> {
  switch (choice.type) {
    case "auto":
      return { type: "auto" };
    case "none":
      return { type: "none" };
    case "required":
      return { type: "any" };
    case "function":
      return { type: "tool", name: choice.name };
  }
}

/** Messages API body: system prompts lifted out of the conversation, tools and choices translated. */
export function anthropicRequestBody(request: ChatRequest, model: string): Record<string, unknown> {
  const s = request.sampling;
  const system = request.messages.filter((m) => m.role === "system").map(messageText).join("\n\n");
  const messages = request.messages
    .map((m, i) => [m, i] as const)
    .filter(([m]) => m.role !== "system")
    .map(([m, i]) => message(m, i));
  return {
    model,
    max_tokens: s.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
    stream: true,
    ...(system ? { system } : {}),
    messages,
    ...(request.tools.length > 0
      ? { tools: request.tools.map((t) => ({ name: t.name, ...(t.description ? { description: t.description } : {}), input_schema: t.parameters })) }
      : {}),
    ...(request.toolChoice ? { tool_choice: toolChoice(request.toolChoice) } : {}),
    ...(s.temperature === undefined ? {} : { temperature: s.temperature }),
    ...(s.topP === undefined ? {} : { top_p: s.topP }),
    ...(s.stop.length > 0 ? { stop_sequences: s.stop } : {}),
    ...(request.metadata.userId ? { metadata: { user_id: request.metadata.userId } } : {}),
  };
}

export function buildAnthropicRequest(request: ChatRequest, target: UpstreamTarget): UpstreamRequest {
  const key = target.provider.apiKey;
  return {
    url: `${target.provider.baseUrl}/messages`,
    headers: {
      "content-type": "application/json",
      accept: "text/event-stream",
      "anthropic-version": ANTHROPIC_VERSION,
      ...(key ? { "x-api-key": key.reveal() } : {}),
    },
    body: JSON.stringify(anthropicRequestBody(request, target.model)),
  };
}
