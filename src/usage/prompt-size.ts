import type { ChatRequest } from "../core/chat-request.js";
import { pooledCounter } from "./pooled-count.js";
import { CHARS_PER_TOKEN } from "./token-count.js";

/**
 * What a request's prompt is made of, for estimating its input tokens
 * without the provider: the text a model reads (message text, replayed
 * reasoning, tool calls and results, tool definitions), how many messages
 * (each costs a few tokens of framing) and how many images (billed by
 * size, which the gateway does not see: a flat IMAGE_TOKENS each).
 */
export interface PromptParts {
  readonly texts: readonly string[];
  readonly messages: number;
  readonly images: number;
}

/** Framing tokens per message and per request (OpenAI's published rule of thumb). */
export const TOKENS_PER_MESSAGE = 4;
export const TOKENS_PER_REQUEST = 3;
/** One image, whatever its size: between OpenAI's low-detail 85 and a large high-detail image. */
export const IMAGE_TOKENS = 1_000;

export function promptParts(request: ChatRequest): PromptParts {
  const texts: string[] = [];
  let images = 0;
  for (const message of request.messages) {
    for (const part of message.content) {
      if (part.type === "text" || part.type === "reasoning") texts.push(part.text);
      else images++;
    }
    for (const call of message.toolCalls ?? []) texts.push(call.name, call.arguments);
  }
  for (const tool of request.tools) texts.push(tool.name, tool.description, JSON.stringify(tool.parameters));
  return { texts, messages: request.messages.length, images };
}

/**
 * Input tokens reserved at admission: characters ÷ CHARS_PER_TOKEN plus
 * framing and images. Cheap (no tokenizer on the request path); the real
 * count replaces it when the stream ends.
 */
export function estimatedInputTokens(request: ChatRequest): number {
  const { texts, messages, images } = promptParts(request);
  let chars = 0;
  for (const text of texts) chars += text.length;
  return Math.ceil(chars / CHARS_PER_TOKEN) + messages * TOKENS_PER_MESSAGE + TOKENS_PER_REQUEST + images * IMAGE_TOKENS;
}

/**
 * Input tokens by the gateway's tokenizer (token-count.ts) plus framing and
 * images: what a stream is charged when its provider reports no usage, and
 * the Anthropic edge's count_tokens answer, so the two agree. Long texts
 * are counted in the worker pool (pooled-count.ts).
 */
export async function countedInputTokens(request: ChatRequest, signal?: AbortSignal): Promise<number> {
  const { texts, messages, images } = promptParts(request);
  const count = await pooledCounter(texts, signal);
  let tokens = messages * TOKENS_PER_MESSAGE + TOKENS_PER_REQUEST + images * IMAGE_TOKENS;
  for (const text of texts) tokens += count(text);
  return tokens;
}
