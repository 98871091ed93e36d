import type { EmbedRequest } from "../core/embed-request.js";
import { tokenCounter } from "./token-count.js";

/**
 * An embedding request's input tokens by the gateway's tokenizer: what is
 * charged when the provider reports no count (Gemini). Token-array inputs
 * are their length; there is no framing to add, unlike a chat prompt.
 */
export async function countedEmbedTokens(request: EmbedRequest): Promise<number> {
  const count = await tokenCounter();
  let tokens = 0;
  for (const input of request.inputs) tokens += typeof input === "string" ? count(input) : input.length;
  return tokens;
}
