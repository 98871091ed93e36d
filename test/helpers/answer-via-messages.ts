import Anthropic, { type ClientOptions } from "@anthropic-ai/sdk";
import type { Answer } from "./answers.js";

/** The tool answers.ts offers on the other edges, in the Messages API's shape, so the simulator names its calls alike. */
export const WEATHER_TOOL: Anthropic.Tool = {
  name: "get_weather",
  description: "Weather for a city",
  input_schema: { type: "object", properties: { city: { type: "string" } } },
};

/**
 * The official SDK pointed at a gateway. No retries: a test sees the
 * gateway's first answer, and a 5xx is not quietly sent three times.
 */
export function messagesClient(baseUrl: string, options: ClientOptions = {}): Anthropic {
  return new Anthropic({ baseURL: baseUrl, apiKey: "not-used", maxRetries: 0, ...options });
}

/** One user turn with the weather tool: the request answers.ts sends on the other edges, in this API's words. */
export function weatherRequest(model: string, prompt: string): Anthropic.MessageCreateParamsNonStreaming {
  return { model, max_tokens: 4096, messages: [{ role: "user", content: prompt }], tools: [WEATHER_TOOL] };
}

const FINISH: Record<Anthropic.StopReason, string> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  tool_use: "tool_calls",
  refusal: "content_filter",
  pause_turn: "pause_turn",
  model_context_window_exceeded: "length",
};

/**
 * A Messages API `message` as the edge-independent Answer. Anthropic's
 * input_tokens leaves cache reads out; the Answer's input (like the gRPC
 * edge's) includes them.
 */
export function answerFromMessage(message: Anthropic.Message): Answer {
  const answer: Answer = { text: "", reasoning: "", toolCalls: [], finish: message.stop_reason ? (FINISH[message.stop_reason] ?? message.stop_reason) : "" };
  for (const block of message.content) {
    if (block.type === "text") answer.text += block.text;
    else if (block.type === "thinking") answer.reasoning += block.thinking;
    else if (block.type === "tool_use") answer.toolCalls.push({ id: block.id, name: block.name, arguments: block.input });
  }
  const cached = message.usage.cache_read_input_tokens ?? 0;
  answer.usage = {
    input: message.usage.input_tokens + cached,
    output: message.usage.output_tokens,
    cached,
    reasoning: message.usage.output_tokens_details?.thinking_tokens ?? 0,
  };
  return answer;
}

/** How the SDK is asked: `messages.create` whole, or `messages.stream(...)` assembled by `finalMessage()`. */
export type MessagesMode = "create" | "stream";
export const MESSAGES_MODES: readonly MessagesMode[] = ["create", "stream"];

/** The message the SDK returns for one weather request, either way. */
export async function messageVia(client: Anthropic, mode: MessagesMode, params: Anthropic.MessageCreateParamsNonStreaming): Promise<Anthropic.Message> {
  return mode === "create" ? client.messages.create(params) : client.messages.stream(params).finalMessage();
}

/** Asks through the Messages edge with the official SDK; the answer as the gRPC edge's helpers shape it (answers.ts). */
export async function answerViaMessages(baseUrl: string, model: string, prompt: string, mode: MessagesMode): Promise<Answer> {
  return answerFromMessage(await messageVia(messagesClient(baseUrl), mode, weatherRequest(model, prompt)));
}
