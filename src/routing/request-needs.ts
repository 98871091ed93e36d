import type { Capabilities } from "../config/capability-table.js";
import type { ChatRequest } from "../core/chat-request.js";
import { IMAGE_TOKENS, promptParts, TOKENS_PER_MESSAGE, TOKENS_PER_REQUEST } from "../usage/prompt-size.js";

/** What a request asks of a model, read from the request alone (no tokenizer). */
export interface RequestNeeds {
  /** It offers tools and lets the model call them. */
  readonly tools: boolean;
  /** An image anywhere in the conversation. */
  readonly vision: boolean;
  /** A strict JSON schema for the answer. */
  readonly jsonSchema: boolean;
  /** Reasoning controls (an effort other than `none`, or a thinking budget). */
  readonly reasoning: boolean;
  /** The output it asks room for (max_tokens), when it says. */
  readonly outputTokens?: number;
}

/** A capability a target lacks for a request, in the words errors use. */
export type Missing = "tools" | "vision" | "jsonSchema" | "reasoning" | "maxOutputTokens";

export const MISSING_WORDS: Readonly<Record<Missing | "contextWindow", string>> = {
  tools: "tool calling",
  vision: "image input (vision)",
  jsonSchema: "strict JSON-schema output",
  reasoning: "reasoning controls",
  maxOutputTokens: "as many output tokens as max_tokens asks",
  contextWindow: "a context window large enough",
};

export function needsOf(request: ChatRequest): RequestNeeds {
  let vision = false;
  for (const message of request.messages) if (message.content.some((part) => part.type === "image_url")) vision = true;
  const reasoning = request.reasoning !== undefined && ((request.reasoning.effort !== undefined && request.reasoning.effort !== "none") || request.reasoning.budgetTokens !== undefined);
  return {
    tools: request.tools.length > 0 && request.toolChoice?.type !== "none",
    vision,
    jsonSchema: request.responseFormat?.type === "json_schema" && request.responseFormat.strict !== false,
    reasoning,
    ...(request.sampling.maxTokens === undefined ? {} : { outputTokens: request.sampling.maxTokens }),
  };
}

/** The first capability `caps` lacks for `needs` (unknown counts as able), or none. */
export function missingOf(needs: RequestNeeds, caps: Capabilities | undefined): Missing | undefined {
  if (!caps) return undefined;
  if (needs.tools && caps.tools === false) return "tools";
  if (needs.vision && caps.vision === false) return "vision";
  if (needs.jsonSchema && caps.jsonSchema === false) return "jsonSchema";
  if (needs.reasoning && caps.reasoning === false) return "reasoning";
  if (needs.outputTokens !== undefined && caps.maxOutputTokens !== undefined && needs.outputTokens > caps.maxOutputTokens) return "maxOutputTokens";
  return undefined;
}

/**
 * A bound no tokenizer count can exceed: byte-pair encodings make at most
 * one token per UTF-8 byte, plus framing and images. When even this fits
 * every window, nothing needs counting: the common case stays cheap.
 */
export function promptTokenBound(request: ChatRequest): number {
  const { texts, messages, images } = promptParts(request);
  let bytes = 0;
  for (const text of texts) bytes += Buffer.byteLength(text, "utf8");
  return bytes + messages * TOKENS_PER_MESSAGE + TOKENS_PER_REQUEST + images * IMAGE_TOKENS;
}
