import type { z } from "zod";
import type { GatewayToolsRequest } from "../../call/gateway-tool-loop.js";
import type { CarriedFields, ChatRequest, HostedKind, HostedTool, ReasoningEffort, ReasoningOptions, ResponseFormat, ServiceTier, ToolChoice, ToolDefinition } from "../../core/chat-request.js";
import { clipClientValue, quoteClientValue } from "../../core/client-text.js";
import { GatewayError } from "../../core/errors.js";
import { pathSegment, type StructureLimits } from "../../core/structure-limits.js";
import { validateChatRequest } from "../../core/validate.js";
import { ANTHROPIC_FIELDS, FORWARDED_BETAS } from "./anthropic-fields.js";
import { anthropicParam, renameLeadingFields } from "./anthropic-params.js";
import { type CountTokensBody, countTokensBody, messagesBody, SERVER_TOOL_TYPE, type ThinkingBody, type ToolBody, type ToolChoiceBody } from "./anthropic-schema.js";
import { cacheMark, canonicalMessages } from "./anthropic-turns.js";
import { mcpServersOf } from "./mcp-servers.js";

/** What a `POST /v1/messages` route needs: the canonical request and whether to answer with SSE. */
export interface AnthropicMessagesRequest {
  readonly request: ChatRequest;
  readonly stream: boolean;
  /** What the edge itself left out (`anthropic-beta=<value>` for betas no target is sent), for `sluice-dropped-params`. */
  readonly droppedParams: readonly string[];
  /** `mcp_servers`: the servers whose tools the gateway runs for this message (`StreamOptions.gatewayTools`). */
  readonly gatewayTools?: GatewayToolsRequest;
}

/** What a Messages request carries beside its body. */
export interface MessagesHeaders {
  /** The `anthropic-beta` header(s), comma-separated as sent. */
  readonly betas?: string;
}

/** What a beta value looks like (`interleaved-thinking-2025-05-14`). */
const BETA_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** The betas an Anthropic target is sent, and the others named as dropped (anthropic-fields.ts). */
function betasOf(header: string | undefined): { readonly forwarded: string[]; readonly dropped: string[] } {
  const forwarded: string[] = [];
  const dropped: string[] = [];
  for (const value of new Set(
    (header ?? "")
      .split(",")
      .map((v) => v.trim())
      .filter((v) => v !== ""),
  )) {
    if (FORWARDED_BETAS.has(value)) forwarded.push(value);
    // Named with its value when it looks like a beta name; anything else could not go into a response header safely.
    else dropped.push(BETA_NAME.test(value) ? `anthropic-beta=${value}` : "anthropic-beta");
  }
  return { forwarded, dropped };
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
    const why = refusedWhy(field);
    return new GatewayError("invalid_request", `${field}: not supported by this gateway${why ? `: ${why}` : ""}`, { field });
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

/** The table's reason for refusing a top-level field it names (anthropic-fields.ts), if any. */
function refusedWhy(field: string): string | undefined {
  return ANTHROPIC_FIELDS.find((rule) => rule.treatment === "refused" && rule.field.split(", ").includes(field))?.why;
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
function reasoningOptions(thinking: ThinkingBody | null | undefined, effort: ReasoningEffort | undefined): ReasoningOptions | undefined {
  if (!thinking) return effort === undefined ? undefined : { effort };
  if (thinking.type === "disabled") return { effort: "none" };
  const display = thinking.display ?? undefined;
  const shown = display === undefined ? {} : { includeReasoning: display !== "omitted", display };
  return thinking.type === "enabled" ? { budgetTokens: thinking.budget_tokens, ...(effort === undefined ? {} : { effort }), ...shown } : { effort: effort ?? "high", ...shown };
}

/** `output_config.effort` in canonical words: Anthropic's `max` is the top, xhigh. */
function effortOf(effort: string | null | undefined): ReasoningEffort | undefined {
  if (effort === null || effort === undefined) return undefined;
  return effort === "max" ? "xhigh" : (effort as ReasoningEffort);
}

function canonicalTool(t: ToolBody): ToolDefinition {
  return {
    name: t.name,
    description: t.description ?? "",
    parameters: t.input_schema ?? {},
    ...(t.strict === null || t.strict === undefined ? {} : { strict: t.strict }),
    ...cacheMark(t.cache_control),
    ...(t.defer_loading === null || t.defer_loading === undefined ? {} : { deferLoading: t.defer_loading }),
    ...(t.eager_input_streaming === null || t.eager_input_streaming === undefined ? {} : { eagerInputStreaming: t.eager_input_streaming }),
  };
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

function canonicalRequest(body: CountTokensBody, settings: Pick<ChatRequest, "sampling" | "metadata" | "serviceTier">, carried: CarriedFields, maxJsonDepth: number): ChatRequest {
  const messages = canonicalMessages(body.system ?? [], body.messages);
  const choice = body.tool_choice;
  const reasoning = reasoningOptions(body.thinking, effortOf(body.output_config?.effort));
  const format = body.output_config?.format;
  const responseFormat: ResponseFormat | undefined = format ? { type: "json_schema", name: "output", schema: format.schema } : undefined;
  const withContext: CarriedFields = body.context_management ? { ...carried, contextManagement: body.context_management } : carried;
  const tools = body.tools ?? [];
  const isServer = (t: (typeof tools)[number]) => typeof t.type === "string" && SERVER_TOOL_TYPE.test(t.type);
  const server = tools.filter(isServer).map((t) => serverTool(t as Record<string, unknown> & { type: string }));
  // `{"type": "tool", "name": "web_search"}` forcing a server tool: refused by name on a target that cannot run it.
  const forcedServer = choice?.type === "tool" ? server.find((t) => t.declaration.name === choice.name) : undefined;
  const draft: ChatRequest = {
    model: body.model,
    messages,
    tools: tools.filter((t) => !isServer(t)).map(canonicalTool),
    ...(server.length > 0 ? { hostedTools: server } : {}),
    ...(choice ? { toolChoice: forcedServer ? { type: "hosted", tool: forcedServer.type } : toolChoice(choice) } : {}),
    // Parallel calls are the default everywhere: only their refusal is said.
    ...(choice && choice.type !== "none" && choice.disable_parallel_tool_use === true ? { parallelToolCalls: false } : {}),
    ...settings,
    ...(reasoning ? { reasoning } : {}),
    ...(responseFormat ? { responseFormat } : {}),
    ...(Object.keys(withContext).length > 0 ? { carried: withContext } : {}),
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
export function anthropicRequestFrom(json: unknown, limits: Pick<StructureLimits, "maxJsonDepth">, headers: MessagesHeaders = {}): AnthropicMessagesRequest {
  const b = parse(messagesBody, json);
  const betas = betasOf(headers.betas);
  const tier: ServiceTier | undefined = b.service_tier === "auto" ? "auto" : b.service_tier === "standard_only" ? "default" : undefined;
  if (b.thinking?.type === "enabled" && b.thinking.budget_tokens >= b.max_tokens) invalid("thinking.budget_tokens", "must be less than max_tokens");
  if (b.thread?.type === "continue") {
    // Only the new messages came: answering them without the history would change the answer. The SDK resends it all.
    throw new GatewayError("invalid_request", "thread: this gateway stores no message thread: send the whole conversation", { field: "thread", reason: "thread_not_found" });
  }
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
      ...(tier ? { serviceTier: tier } : {}),
    },
    betas.forwarded.length > 0 ? { anthropicBetas: betas.forwarded } : {},
    limits.maxJsonDepth,
  );
  // A thread to create changes no answer: the conversation is all here, and nothing is stored.
  const gatewayTools = mcpServersOf(b.mcp_servers);
  return { request, stream: b.stream === true, droppedParams: b.thread ? [...betas.dropped, "thread"] : betas.dropped, ...(gatewayTools ? { gatewayTools } : {}) };
}

/**
 * A count_tokens body as the canonical request whose prompt is counted: the
 * same fields as a message request without the generation settings
 * (max_tokens, stream, sampling, stop sequences, metadata), which it refuses
 * like any unknown field.
 */
export function countTokensRequestFrom(json: unknown, limits: Pick<StructureLimits, "maxJsonDepth">): ChatRequest {
  return canonicalRequest(parse(countTokensBody, json), { sampling: { stop: [] }, metadata: { labels: {} } }, {}, limits.maxJsonDepth);
}
