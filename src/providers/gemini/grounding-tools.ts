import type { ChatRequest, HostedKind, HostedTool } from "../../core/chat-request.js";
import type { HostedSupport } from "../provider.js";

/** Gemini's own tools for the hosted kinds it has: Google Search grounding, URL context. */
const GEMINI_TOOL: Partial<Record<HostedKind, Record<string, unknown>>> = {
  web_search: { googleSearch: {} },
  web_fetch: { urlContext: {} },
};

/**
 * Gemini runs no other API's hosted tools, but grounds on Google Search
 * where a caller offered web search, and reads pages where it offered a
 * fetch tool; the answer's text carries what they found.
 */
export const geminiHosted: HostedSupport = {
  origin: "gemini",
  equivalent(tool: HostedTool): HostedTool | undefined {
    const declaration = GEMINI_TOOL[tool.kind];
    return declaration ? { type: Object.keys(declaration)[0]!, kind: tool.kind, origin: "gemini", declaration } : undefined;
  },
};

/** The request's grounding tools as `tools[]` entries, one per kind. */
export function groundingTools(request: ChatRequest): Array<Record<string, unknown>> {
  const seen = new Set<string>();
  const out: Array<Record<string, unknown>> = [];
  for (const t of request.hostedTools ?? []) {
    if (t.origin !== "gemini" || seen.has(t.type)) continue;
    seen.add(t.type);
    out.push({ ...t.declaration });
  }
  return out;
}
