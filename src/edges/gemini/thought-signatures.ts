import type { ChatMessage, ChatRequest, ProviderKind } from "../../core/chat-request.js";

/**
 * Thought signatures on the Gemini edge travel in the caller's own
 * `thoughtSignature` fields, so no replay store is needed; but a caller's
 * history may hold signatures from several providers (a failover, a changed
 * alias), and a signature verifies only where it was issued. A signature a
 * Gemini upstream issued goes to the caller unchanged; one from another
 * wire (an Anthropic thinking signature) is marked with its wire
 * (`sluice1:anthropic:…`). On the way back each is sent only to a target
 * of its own wire, unmarked; elsewhere it is left out. An unmarked
 * signature is Google's (the caller may have talked to Google before).
 */
const MARK = "sluice1:";

/** The signature as the caller receives it, for an answer served on `kind`'s wire. */
export function signatureForCaller(signature: string, kind: ProviderKind | undefined): string {
  return kind === "gemini" ? signature : `${MARK}${kind ?? "unknown"}:${signature}`;
}

/** The signature as `kind`'s upstream takes it, or undefined when it was issued elsewhere. */
function signatureForTarget(signature: string, kind: ProviderKind): string | undefined {
  if (!signature.startsWith(MARK)) return kind === "gemini" ? signature : undefined;
  const rest = signature.slice(MARK.length);
  const colon = rest.indexOf(":");
  return colon > 0 && rest.slice(0, colon) === kind ? rest.slice(colon + 1) : undefined;
}

function forTarget(m: ChatMessage, kind: ProviderKind): ChatMessage {
  if (m.role !== "assistant" && !m.content.some((p) => p.type === "reasoning")) return m;
  const content = m.content.flatMap((p) => {
    if (p.type !== "reasoning" || p.signature === undefined) return [p];
    const signature = signatureForTarget(p.signature, kind);
    if (signature !== undefined) return [{ ...p, signature }];
    // Unsigned reasoning text stays (a provider may take it as context); a bare foreign signature is nothing.
    return p.text === "" ? [] : [{ type: "reasoning" as const, text: p.text }];
  });
  const toolCalls = m.toolCalls?.map((c) => {
    if (c.signature === undefined) return c;
    const signature = signatureForTarget(c.signature, kind);
    const { signature: _dropped, ...call } = c;
    return signature === undefined ? call : { ...call, signature };
  });
  return { ...m, content, ...(toolCalls ? { toolCalls } : {}) };
}

/** The request with each signature kept for the target's wire only. */
export function signaturesFor(request: ChatRequest, kind: ProviderKind): ChatRequest {
  return { ...request, messages: request.messages.map((m) => forTarget(m, kind)) };
}
