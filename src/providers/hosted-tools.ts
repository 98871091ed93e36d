import type { ChatMessage, ChatRequest, ContentPart, HostedOrigin, HostedTool, ToolChoice } from "../core/chat-request.js";
import { GatewayError } from "../core/errors.js";
import type { ProviderAdapter, UpstreamTarget } from "./provider.js";

/** `hostedTools` of an alias: `offer` drops what a target cannot run (named), `refuse` fails the request instead. */
export type HostedToolsPolicy = "offer" | "refuse";

/** How a drop or refusal names a declared hosted tool: by the `type` the caller gave it. */
export function hostedToolField(tool: Pick<HostedTool, "type">): string {
  return `tools.${tool.type}`;
}

function refusal(field: string, target: UpstreamTarget, why: string): GatewayError {
  const p = target.provider;
  return new GatewayError("invalid_request", `${field}: ${why} on provider ${p.name} (${p.kind})`, { field, provider: p.name });
}

function choiceFor(choice: ToolChoice | undefined, mapped: ReadonlyMap<string, HostedTool>): ToolChoice | undefined {
  if (choice?.type !== "hosted") return choice;
  const tool = mapped.get(choice.tool);
  return tool ? { type: "hosted", tool: tool.type } : choice;
}

function keptParts(message: ChatMessage, i: number, origin: HostedOrigin | undefined, dropped: string[]): ChatMessage {
  if (!message.content.some((p) => p.type === "hosted_item" && p.origin !== origin)) return message;
  const content: ContentPart[] = [];
  message.content.forEach((part, j) => {
    if (part.type === "hosted_item" && part.origin !== origin) dropped.push(`messages[${i}].content[${j}]`);
    else content.push(part);
  });
  return { ...message, content };
}

/**
 * The request's hosted tools as one target can take them, applied once per
 * attempt beside the unsupported-parameter rule: a tool of the target's own
 * origin goes as declared, another origin's goes as the target's
 * equivalent, and one with neither is dropped and named — a declaration is
 * an offer — unless `tool_choice` forces it or the alias's `hostedTools` is
 * `refuse`, which fail the request naming the tool. Items of earlier hosted
 * calls go only to a target of their origin, and are dropped (named) elsewhere.
 */
export function prepareHostedTools(adapter: ProviderAdapter, request: ChatRequest, target: UpstreamTarget, policy: HostedToolsPolicy): { readonly request: ChatRequest; readonly dropped: readonly string[] } {
  const support = adapter.hosted;
  const dropped: string[] = [];
  const hosted: HostedTool[] = [];
  const mapped = new Map<string, HostedTool>();
  for (const tool of request.hostedTools ?? []) {
    const sent = tool.origin === support?.origin ? tool : support?.equivalent(tool);
    if (sent) {
      hosted.push(sent);
      mapped.set(tool.type, sent);
      continue;
    }
    const field = hostedToolField(tool);
    if (request.toolChoice?.type === "hosted" && request.toolChoice.tool === tool.type) {
      throw refusal(field, target, "tool_choice forces this hosted tool, which neither runs nor has an equivalent");
    }
    if (policy === "refuse") throw refusal(field, target, "hosted tool not available (the alias sets hostedTools: refuse)");
    dropped.push(field);
  }
  const origin = support?.origin;
  const messages = request.messages.map((m, i) => keptParts(m, i, origin, dropped));
  if (dropped.length === 0 && mapped.size === (request.hostedTools?.length ?? 0) && [...mapped].every(([type, t]) => t.type === type)) {
    return { request, dropped };
  }
  const { hostedTools: _all, ...rest } = request;
  const toolChoice = choiceFor(request.toolChoice, mapped);
  const out: ChatRequest = { ...rest, messages, ...(hosted.length > 0 ? { hostedTools: hosted } : {}) };
  return { request: toolChoice === request.toolChoice ? out : { ...out, ...(toolChoice ? { toolChoice } : {}) }, dropped };
}
