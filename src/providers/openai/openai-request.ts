import { type ChatMessage, type ChatRequest, messageText, type ToolChoice } from "../../core/chat-request.js";
import type { UpstreamRequest, UpstreamTarget } from "../provider.js";

function content(message: ChatMessage): unknown {
  if (message.content.every((part) => part.type === "text")) return messageText(message);
  return message.content.map((part) =>
    part.type === "text"
      ? { type: "text", text: part.text }
      : { type: "image_url", image_url: { url: part.url, ...(part.detail ? { detail: part.detail } : {}) } },
  );
}

function message(m: ChatMessage): Record<string, unknown> {
  const base = m.name ? { name: m.name } : {};
  switch (m.role) {
    case "tool":
      return { role: "tool", tool_call_id: m.toolCallId, content: messageText(m) };
    case "assistant": {
      const calls = m.toolCalls ?? [];
      return {
        role: "assistant",
        ...base,
        content: m.content.length === 0 && calls.length > 0 ? null : content(m),
        ...(calls.length > 0
          ? { tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) }
          : {}),
      };
    }
    default:
      return { role: m.role, ...base, content: content(m) };
  }
}

function toolChoice(choice: ToolChoice): unknown {
  return choice.type === "function" ? { type: "function", function: { name: choice.name } } : choice.type;
}

/** The Chat Completions request body; always streaming, always asking for usage. */
export function openAiRequestBody(request: ChatRequest, model: string): Record<string, unknown> {
  const s = request.sampling;
  return {
    model,
    messages: request.messages.map(message),
    stream: true,
    stream_options: { include_usage: true },
    ...(request.tools.length > 0
      ? {
          tools: request.tools.map((t) => ({
            type: "function",
            function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.parameters },
          })),
        }
      : {}),
    ...(request.toolChoice ? { tool_choice: toolChoice(request.toolChoice) } : {}),
    ...(s.temperature === undefined ? {} : { temperature: s.temperature }),
    ...(s.topP === undefined ? {} : { top_p: s.topP }),
    ...(s.maxTokens === undefined ? {} : { max_tokens: s.maxTokens }),
    ...(s.stop.length > 0 ? { stop: s.stop } : {}),
    ...(s.seed === undefined ? {} : { seed: s.seed }),
    ...(request.metadata.userId ? { user: request.metadata.userId } : {}),
  };
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
    body: JSON.stringify(openAiRequestBody(request, target.model)),
  };
}
