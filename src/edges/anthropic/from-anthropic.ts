import type { z } from "zod";
import type { ChatRequest, HostedKind, HostedTool, ReasoningOptions, ToolChoice } from "../../core/chat-request.js";
import { clipClientValue, quoteClientValue } from "../../core/client-text.js";
import { GatewayError } from "../../core/errors.js";
import { pathSegment, type StructureLimits } from "../../core/structure-limits.js";
import { validateChatRequest } from "../../core/validate.js";
import { canonicalMessages } from "./anthropic-turns.js";
import { anthropicParam, renameLeadingFields } from "./anthropic-params.js";
import { type CountTokensBody, countTokensBody, messagesBody, SERVER_TOOL_TYPE, type ThinkingBody, type ToolChoiceBody } from "./anthropic-schema.js";

/** What a `POST /v1/messages` route needs: the canonical request and whether to answer with SSE. */
export interface AnthropicMessagesRequest {
  readonly request: ChatRequest;
  readonly stream: boolean;
}

function invalid(field: string, problem: string): never {
  throw new GatewayError("invalid_request", `${field}: ${problem}`, { field });
}

function fieldOf(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, key) => pathSegment(out, typeof key === "number" ? key : String(key)), "");
}

function valueAt(json: unknown, path: readonly PropertyKey[]): unknown {
  let value = json;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/**
 * The first problem zod found, as a 400 naming the field: an unknown or
 * unsupported field by its path, a block or source type this gateway does
 * not take by its value and the ones it does. Keys and values are the
 * client's, so they are cut before they are echoed.
 */
function refusal(issue: z.core.$ZodIssue, json: unknown): GatewayError {
  const at = fieldOf(issue.path);
  if (issue.code === "unrecognized_keys") {
    const field = clipClientValue(pathSegment(at, issue.keys[0] ?? ""));
    return new GatewayError("invalid_request", `${field}: not supported by this gateway`, { field });
  }
  const field = clipClientValue(at);
  const what = field === "" ? "request body" : field;
  if (issue.code === "invalid_union" && issue.discriminator !== undefined && "options" in issue && issue.options) {
    const value = valueAt(json, issue.path);
    const expected = issue.options.map((o) => JSON.stringify(o)).join(", ");
    const problem = value === undefined ? "is required" : `${typeof value === "string" ? quoteClientValue(value, 64) : "this value"} is not supported here`;
    return new GatewayError("invalid_request", `${what}: ${problem} (expected ${expected})`, { field: field || "body" });
  }
  return new GatewayError("invalid_request", `${what}: ${clipClientValue(issue.message)}`, { field: field || "body" });
}

function parse<T extends z.ZodType>(schema: T, json: unknown): z.infer<T> {
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw refusal(parsed.error.issues[0]!, json);
  return parsed.data;
}

function toolChoice(choice: ToolChoiceBody): ToolChoice {
  switch (choice.type) {
    case "auto":
      return { type: "auto" };
    case "any":
      return { type: "required" };
    case "tool":
      return { type: "function", name: choice.name };
    case "none":
      return { type: "none" };
  }
}

/**
 * Thinking in canonical terms. Adaptive thinking is thinking at Anthropic's
 * default effort, high: an Anthropic target receives exactly `adaptive` with
 * effort high again, other providers their high effort. `display: omitted`
 * is `includeReasoning: false`: signatures still reach the client, text not.
 */
function reasoningOptions(thinking: ThinkingBody): ReasoningOptions {
  if (thinking.type === "disabled") return { effort: "none" };
  const shown = thinking.display === "omitted" ? { includeReasoning: false } : thinking.display === "summarized" ? { includeReasoning: true } : {};
  return thinking.type === "enabled" ? { budgetTokens: thinking.budget_tokens, ...shown } : { effort: "high", ...shown };
}

/**
 * A refusal from the canonical checks, which name canonical fields
 * (`sampling.stop`, `tools[0].parameters`), in the client's terms
 * (`stop_sequences`, `tools[0].input_schema`). Canonical message indices do
 * not match the client's (see anthropic-turns.ts, which checks every
 * per-message rule itself), so such a field is named `messages` only.
 */
function inAnthropicTerms(error: unknown): unknown {
  if (!(error instanceof GatewayError) || error.field === undefined) return error;
  const rename = (field: string): string => (field.startsWith("messages[") ? "messages" : anthropicParam(field));
  return new GatewayError(error.code, renameLeadingFields(error.message, error.field, rename), { field: rename(error.field) });
}

/** A server tool as a hosted tool of Anthropic's origin: its kind from its type (`web_search_20250305` → web_search). */
function serverTool(t: Record<string, unknown> & { type: string }): HostedTool {
  const kind: HostedKind = t.type.startsWith("web_search_") ? "web_search" : t.type.startsWith("web_fetch_") ? "web_fetch" : "code_execution";
  const declaration = Object.fromEntries(Object.entries(t).filter(([, v]) => v !== null && v !== undefined));
  return { type: t.type, kind, origin: "anthropic", declaration };
}

function canonicalRequest(body: CountTokensBody, settings: Pick<ChatRequest, "sampling" | "metadata">, maxJsonDepth: number): ChatRequest {
  const messages = canonicalMessages(body.system ?? [], body.messages);
  const choice = body.tool_choice;
  const tools = body.tools ?? [];
  const isServer = (t: (typeof tools)[number]) => typeof t.type === "string" && SERVER_TOOL_TYPE.test(t.type);
  const custom = tools.filter((t) => !isServer(t));
  const server = tools.filter(isServer).map((t) => serverTool(t as Record<string, unknown> & { type: string }));
  // `{"type": "tool", "name": "web_search"}` forcing a server tool: refused by name on a target that cannot run it.
  const forcedServer = choice?.type === "tool" ? server.find((t) => t.declaration.name === choice.name) : undefined;
  const draft: ChatRequest = {
    model: body.model,
    messages,
    tools: custom.map((t) => ({
      name: t.name,
      description: t.description ?? "",
      parameters: t.input_schema ?? {},
      ...(t.strict === null || t.strict === undefined ? {} : { strict: t.strict }),
    })),
    ...(server.length > 0 ? { hostedTools: server } : {}),
    ...(choice ? { toolChoice: forcedServer ? { type: "hosted", tool: forcedServer.type } : toolChoice(choice) } : {}),
    // Parallel calls are the default everywhere: only their refusal is said.
    ...(choice && choice.type !== "none" && choice.disable_parallel_tool_use === true ? { parallelToolCalls: false } : {}),
    ...settings,
    ...(body.thinking ? { reasoning: reasoningOptions(body.thinking) } : {}),
  };
  try {
    return validateChatRequest(draft, maxJsonDepth);
  } catch (error) {
    throw inAnthropicTerms(error);
  }
}

/**
 * A Messages API body (already parsed JSON, see request-json.ts) as a
 * validated canonical request. Anything Sluice cannot honour fails with
 * `invalid_request` naming the field; nothing is dropped. Ranges are
 * Anthropic's where they are stricter than the gateway's (temperature 0-1,
 * thinking budget at least 1024 and below max_tokens), so a request this
 * accepts is one Anthropic accepts too.
 */
export function anthropicRequestFrom(json: unknown, limits: Pick<StructureLimits, "maxJsonDepth">): AnthropicMessagesRequest {
  const b = parse(messagesBody, json);
  if (b.thinking?.type === "enabled" && b.thinking.budget_tokens >= b.max_tokens) invalid("thinking.budget_tokens", "must be less than max_tokens");
  const present = <T>(value: T | null | undefined): value is T => value !== null && value !== undefined;
  const request = canonicalRequest(
    b,
    {
      sampling: {
        maxTokens: b.max_tokens,
        stop: b.stop_sequences ?? [],
        ...(present(b.temperature) ? { temperature: b.temperature } : {}),
        ...(present(b.top_p) ? { topP: b.top_p } : {}),
        ...(present(b.top_k) ? { topK: b.top_k } : {}),
      },
      metadata: { labels: {}, ...(present(b.metadata?.user_id) ? { userId: b.metadata.user_id } : {}) },
    },
    limits.maxJsonDepth,
  );
  return { request, stream: b.stream === true };
}

/**
 * A count_tokens body as the canonical request whose prompt is counted: the
 * same fields as a message request without the generation settings
 * (max_tokens, stream, sampling, stop sequences, metadata), which it refuses
 * like any unknown field.
 */
export function countTokensRequestFrom(json: unknown, limits: Pick<StructureLimits, "maxJsonDepth">): ChatRequest {
  return canonicalRequest(parse(countTokensBody, json), { sampling: { stop: [] }, metadata: { labels: {} } }, limits.maxJsonDepth);
}
