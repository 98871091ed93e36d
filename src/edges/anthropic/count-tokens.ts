import type { ChatRequest } from "../../core/chat-request.js";
import { countedInputTokens } from "../../usage/prompt-size.js";

/** The body of a count_tokens answer. */
export interface MessageTokensCount {
  readonly input_tokens: number;
}

/**
 * `POST /v1/messages/count_tokens` answered by the gateway itself, with its
 * tokenizer (o200k_base, usage/token-count.ts) plus per-message framing and
 * a flat count per image (usage/prompt-size.ts). Exact for current OpenAI
 * models only: for Anthropic and Gemini targets it is an estimate, as their
 * tokenizers are not available here. It is not forwarded to a provider
 * because an alias may fail over between providers that count differently,
 * and because it is the count the gateway charges a stream whose provider
 * reports no usage, so a client budgeting with it sees the same number.
 */
export async function countTokensResponse(request: ChatRequest): Promise<MessageTokensCount> {
  return { input_tokens: await countedInputTokens(request) };
}
