import type { ChatRequest } from "../core/chat-request.js";
import type { ContentDelta } from "../core/delta.js";
import type { StreamTranslator } from "./provider.js";

function strip(deltas: readonly ContentDelta[]): ContentDelta[] {
  const out: ContentDelta[] = [];
  for (const d of deltas) {
    if (d.type !== "reasoning" || d.text === "") out.push(d);
    else if (d.signature !== undefined) out.push({ type: "reasoning", text: "", signature: d.signature });
  }
  return out;
}

/**
 * Applies `reasoning.include_reasoning: false` for every provider alike:
 * reasoning text never leaves the gateway, signatures still do. Requests
 * that did not ask get the translator itself, at no cost per delta.
 */
export function withReasoningVisibility(translator: StreamTranslator, request: ChatRequest): StreamTranslator {
  if (request.reasoning?.includeReasoning !== false) return translator;
  return { event: (e) => strip(translator.event(e)), end: () => strip(translator.end()) };
}
