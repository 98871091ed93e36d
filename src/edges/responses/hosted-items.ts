import type { HostedItemDelta } from "../../core/delta.js";
import type { HostedCallOutput } from "./response-object.js";

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/**
 * A hosted tool's item as a Responses output item: OpenAI's web search
 * calls as they came (other hosted items are not relayed yet); Anthropic's web search call as the `web_search_call` it is (its
 * results, pages the model read, have no field in that item and reach the
 * caller as the answer's text). Anything else has no Responses form and is
 * not shown (undefined).
 */
export function hostedOutputItem(delta: HostedItemDelta, newId: () => string): HostedCallOutput | undefined {
  const item = delta.item;
  if (delta.origin === "openai") {
    if (item.type !== "web_search_call") return undefined;
    const action = item.action !== null && typeof item.action === "object" ? (item.action as HostedCallOutput["action"]) : { type: "search" as const };
    return { type: "web_search_call", id: text(item.id) ?? newId(), status: "completed", action };
  }
  if (delta.origin === "anthropic" && item.type === "server_tool_use" && item.name === "web_search") {
    const input = item.input !== null && typeof item.input === "object" ? (item.input as { query?: unknown }) : {};
    const query = text(input.query);
    return { type: "web_search_call", id: text(item.id) ?? newId(), status: "completed", action: { type: "search", ...(query === undefined ? {} : { query }) } };
  }
  return undefined;
}
