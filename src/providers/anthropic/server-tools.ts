import type { ChatRequest, HostedTool } from "../../core/chat-request.js";
import type { HostedSupport } from "../provider.js";

/** The version of Anthropic's web search tool an OpenAI `web_search` declaration becomes. */
export const ANTHROPIC_WEB_SEARCH = "web_search_20250305";

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/**
 * Anthropic runs its own server tools as declared; OpenAI's web search is
 * its web search tool, with the settings both have (allowed domains, the
 * user's approximate location, which both write the same way).
 */
export const anthropicHosted: HostedSupport = {
  origin: "anthropic",
  equivalent(tool: HostedTool): HostedTool | undefined {
    if (tool.kind !== "web_search") return undefined;
    const d = tool.declaration;
    const domains = record(d.filters)?.allowed_domains;
    const location = record(d.user_location);
    return {
      type: ANTHROPIC_WEB_SEARCH,
      kind: "web_search",
      origin: "anthropic",
      declaration: {
        type: ANTHROPIC_WEB_SEARCH,
        name: "web_search",
        ...(Array.isArray(domains) ? { allowed_domains: domains } : {}),
        ...(location ? { user_location: { ...location, type: "approximate" } } : {}),
      },
    };
  },
};

/** The request's server tools as Messages API tool entries (after hosted-tools.ts kept only Anthropic's). */
export function serverTools(request: ChatRequest): Array<Record<string, unknown>> {
  return (request.hostedTools ?? []).filter((t) => t.origin === "anthropic").map((t) => ({ ...t.declaration }));
}

/** The `name` a server tool is called by (`web_search`), for a tool_choice that forces it. */
export function serverToolName(request: ChatRequest, type: string): string {
  const tool = (request.hostedTools ?? []).find((t) => t.type === type);
  const name = tool?.declaration.name;
  return typeof name === "string" ? name : type.replace(/_\d{8}$/, "");
}
