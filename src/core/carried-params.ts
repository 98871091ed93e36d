import type { CarriedFields, ChatMessage, ChatRequest, ContentPart, ProviderKind, ToolDefinition } from "./chat-request.js";

/**
 * Fields that change what a request costs or how it is handled upstream,
 * never what it answers, named as every HTTP edge names them. A target
 * whose API has no place for one gets the request without it, and the
 * answer names it in `sluice-dropped-params`; unlike an OptionalParam
 * (request-params.ts) this never fails a request, with or without the
 * alias's `dropUnsupportedParams`.
 */
export type CarriedParam = "cache_control" | "tools.defer_loading" | "tools.eager_input_streaming" | "context_management" | "anthropic-beta" | "prompt_cache_key" | "safety_identifier";

/** Which provider kinds take each carried field (the rest drop it). */
const TAKEN_BY: Readonly<Record<CarriedParam, readonly ProviderKind[]>> = {
  cache_control: ["anthropic"],
  "tools.defer_loading": ["anthropic"],
  "tools.eager_input_streaming": ["anthropic"],
  context_management: ["anthropic"],
  "anthropic-beta": ["anthropic"],
  prompt_cache_key: ["openai", "openai-responses"],
  safety_identifier: ["openai", "openai-responses"],
};

const marked = (value: { readonly cache?: unknown }): boolean => value.cache !== undefined;
const partsMarked = (m: ChatMessage): boolean => marked(m) || m.content.some((p) => p.type !== "reasoning" && p.type !== "hosted_item" && marked(p)) || (m.toolCalls ?? []).some(marked);

/** The carried fields `request` sets, in a fixed order. */
export function carriedParamsOf(request: ChatRequest): CarriedParam[] {
  const c: CarriedFields = request.carried ?? {};
  const out: CarriedParam[] = [];
  if (request.tools.some(marked) || request.messages.some(partsMarked)) out.push("cache_control");
  if (request.tools.some((t) => t.deferLoading !== undefined)) out.push("tools.defer_loading");
  if (request.tools.some((t) => t.eagerInputStreaming !== undefined)) out.push("tools.eager_input_streaming");
  if (c.contextManagement !== undefined) out.push("context_management");
  if ((c.anthropicBetas?.length ?? 0) > 0) out.push("anthropic-beta");
  if (c.promptCacheKey !== undefined) out.push("prompt_cache_key");
  if (c.safetyIdentifier !== undefined) out.push("safety_identifier");
  return out;
}

/** The carried fields of `request` a target of `kind` has no place for. */
export function carriedParamsDroppedBy(request: ChatRequest, kind: ProviderKind): CarriedParam[] {
  return carriedParamsOf(request).filter((param) => !TAKEN_BY[param].includes(kind));
}

function unmarked<T extends { readonly cache?: unknown }>(value: T): T {
  if (value.cache === undefined) return value;
  const { cache: _dropped, ...rest } = value;
  return rest as T;
}

function withoutMarks(m: ChatMessage): ChatMessage {
  if (!partsMarked(m)) return m;
  const content = m.content.map((p): ContentPart => (p.type === "reasoning" || p.type === "hosted_item" ? p : unmarked(p)));
  return unmarked({ ...m, content, ...(m.toolCalls ? { toolCalls: m.toolCalls.map(unmarked) } : {}) });
}

function withoutToolField(tool: ToolDefinition, key: "deferLoading" | "eagerInputStreaming"): ToolDefinition {
  if (tool[key] === undefined) return tool;
  const { [key]: _dropped, ...rest } = tool;
  return rest;
}

function withoutCarriedField(carried: CarriedFields, key: keyof CarriedFields): CarriedFields {
  const { [key]: _dropped, ...rest } = carried;
  return rest;
}

/** The request without the named carried fields, for a target that has no place for them. */
export function withoutCarried(request: ChatRequest, params: readonly CarriedParam[]): ChatRequest {
  let out = request;
  const carried = (key: keyof CarriedFields) => {
    if (out.carried) out = { ...out, carried: withoutCarriedField(out.carried, key) };
  };
  for (const param of params) {
    switch (param) {
      case "cache_control":
        out = { ...out, tools: out.tools.map(unmarked), messages: out.messages.map(withoutMarks) };
        break;
      case "tools.defer_loading":
        out = { ...out, tools: out.tools.map((t) => withoutToolField(t, "deferLoading")) };
        break;
      case "tools.eager_input_streaming":
        out = { ...out, tools: out.tools.map((t) => withoutToolField(t, "eagerInputStreaming")) };
        break;
      case "context_management":
        carried("contextManagement");
        break;
      case "anthropic-beta":
        carried("anthropicBetas");
        break;
      case "prompt_cache_key":
        carried("promptCacheKey");
        break;
      case "safety_identifier":
        carried("safetyIdentifier");
        break;
    }
  }
  return out;
}
