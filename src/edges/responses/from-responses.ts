import { z } from "zod";
import type { GatewayToolsRequest } from "../../call/gateway-tool-loop.js";
import { type CarriedFields, type ChatRequest, flatToolName, type ResponseFormat, type ToolChoice } from "../../core/chat-request.js";
import { quoteClientValue } from "../../core/client-text.js";
import { GatewayError } from "../../core/errors.js";
import type { ReplayOrigin } from "../../core/replay-origins.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import { validateChatRequest } from "../../core/validate.js";
import { parseJsonBody } from "../../http/read-json.js";
import type { StoredTurn } from "../../response-state/stored-response.js";
import { type ConversationRequest, conversationIdOf, conversationRequest } from "./conversation-request.js";
import { type DeclaredTools, declaredTools, isHostedType } from "./declared-tools.js";
import { messagesFromInput } from "./input-items.js";
import { inputParam } from "./input-paths.js";
import { invalidField, parseAt } from "./invalid-field.js";
import { refuseUnservedFields } from "./refused-fields.js";
import type { ResponseEcho, WireTextFormat, WireToolChoice } from "./response-object.js";
import { inResponsesWords, responsesParam } from "./responses-errors.js";
import { responsesBody } from "./responses-schema.js";
import type { DeclaredCall } from "./to-responses.js";
import { withHistory } from "./with-history.js";

/** What serving one `POST /v1/responses` needs beyond the canonical request. */
export interface ResponsesRequest {
  readonly request: ChatRequest;
  readonly stream: boolean;
  /** `background: true`: run detached from the call, returned queued (background-runs.ts). */
  readonly background: boolean;
  /** The request fields every `response` object repeats: give it to the encoder. */
  readonly echo: ResponseEcho;
  /** Who issued the replayed reasoning: for `replayForTarget` in the pipeline's per-target `prepare`. */
  readonly origins: readonly ReplayOrigin[];
  /** A canonical field path (validation, the pipeline) as this request names it: for `toResponsesError`. */
  readonly param: (field: string) => string;
  /** Body fields the edge accepted and does not act on (responses-fields.ts), set in this body, for `sluice-dropped-params`. */
  readonly droppedParams: readonly string[];
  /** Freeform tools and namespace members by canonical name: for the encoder (`ResponseEncoderOptions.calls`). */
  readonly calls: ReadonlyMap<string, DeclaredCall>;
  /** Whether the response is to be kept (`store`, true when absent where the gateway keeps responses). */
  readonly store: boolean;
  /** The response this one continues. */
  readonly previousId?: string;
  /** `mcp` tools: the servers whose tools the gateway runs for this response (`StreamOptions.gatewayTools`). */
  readonly gatewayTools?: GatewayToolsRequest;
  /** This request's own input as sent (item references resolved): what a stored response keeps as its input items. */
  readonly input: string | readonly unknown[];
  /** `conversation`: the request is joined to its items before it is called (conversation-turn.ts). */
  readonly conversation?: ConversationRequest<ResponsesRequest>;
}

/** What the stored state adds to decoding a body (stored-input.ts loads it). */
export interface StoredContext {
  /** The gateway keeps responses (config responses.store): `store`, `previous_response_id` and `item_reference` are served. */
  readonly stateful: boolean;
  /** The conversation `previous_response_id` names, as one turn. */
  readonly history?: StoredTurn;
}

const namedChoice = z.object({ type: z.enum(["function", "custom"]), name: z.string(), namespace: z.string().nullish() });

/** OpenAI's prompt-cache and safety keys, carried to OpenAI targets (core/carried-params.ts). */
function carriedOf(promptCacheKey: string | null | undefined, safetyIdentifier: string | null | undefined): CarriedFields | undefined {
  const carried: CarriedFields = {
    ...(promptCacheKey ? { promptCacheKey } : {}),
    ...(safetyIdentifier ? { safetyIdentifier } : {}),
  };
  return Object.keys(carried).length > 0 ? carried : undefined;
}

function toolChoiceFrom(value: unknown, declared: DeclaredTools): WireToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === "auto" || value === "none" || value === "required") return value;
  const type = value !== null && typeof value === "object" ? (value as { type?: unknown }).type : undefined;
  if (type === "function" || type === "custom") {
    const c = parseAt(namedChoice, value, "tool_choice");
    return { type: c.type, name: c.namespace ? flatToolName(c.namespace, c.name) : c.name };
  }
  if (typeof type === "string" && isHostedType(type)) {
    if (!declared.hosted.some((t) => t.type === type)) invalidField("tool_choice", `forces the hosted tool ${quoteClientValue(type, 64)}, which tools does not declare`);
    return { type };
  }
  return invalidField("tool_choice", 'must be "auto", "none", "required", {"type": "function" or "custom", "name": …} or a declared hosted tool: allowed_tools is not served');
}

function canonicalChoice(choice: WireToolChoice): ToolChoice {
  if (typeof choice === "string") return { type: choice };
  if ("name" in choice && (choice.type === "function" || choice.type === "custom")) return { type: "function", name: choice.name };
  return { type: "hosted", tool: choice.type };
}

/** A canonical path naming a tool (`tools[2].parameters`) as the request named it (`tools[4].tools[1].parameters`). */
function toolParam(field: string, paths: readonly string[]): string | undefined {
  const m = /^tools\[(\d+)\](.*)$/.exec(field);
  const path = m ? paths[Number(m[1])] : undefined;
  return path === undefined ? undefined : `${path}${m![2]}`;
}

function canonicalFormat(format: WireTextFormat): ResponseFormat {
  if (format.type !== "json_schema") return { type: format.type };
  return { type: "json_schema", name: format.name, description: format.description, schema: format.schema, strict: format.strict ?? undefined };
}

/**
 * A Responses API body as a validated canonical request: `input` items
 * become messages (input-items.ts), everything the gateway cannot honour is
 * refused naming its field (refused-fields.ts), and the canonical checks
 * every edge shares run with their errors named the Responses way
 * (`input[3].content`, `max_output_tokens`).
 */
export function responsesRequestFrom(json: unknown, limits: Pick<StructureLimits, "maxJsonDepth">, stored: StoredContext = { stateful: false }): ResponsesRequest {
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new GatewayError("invalid_request", "request body: must be a JSON object", { field: "body" });
  }
  const conversationId = conversationIdOf(json as Record<string, unknown>);
  const droppedParams = refuseUnservedFields(json as Record<string, unknown>, stored.stateful);
  const b = parseAt(responsesBody, json, "");
  // As the API: a background response is one the gateway keeps until it is retrieved.
  if (b.background === true && b.store === false) invalidField("background", "needs store: true (the default): a background response is kept until it is retrieved");
  const declared = declaredTools(b.tools ?? []);
  const toolChoice = toolChoiceFrom(b.tool_choice, declared);
  const f = b.text?.format ?? undefined;
  const format: WireTextFormat | undefined = f?.type === "json_schema" ? { ...f, description: f.description ?? undefined, strict: f.strict ?? null } : f;
  const { messages, sources, origins } = withHistory(messagesFromInput(b.input, b.instructions ?? undefined), stored.history, Boolean(b.instructions));
  const param = (field: string) => inputParam(field, sources) ?? toolParam(field, declared.paths) ?? responsesParam(field);
  const metadata = b.metadata ?? {};
  // As in the API, absent is true; a gateway that keeps nothing refused true above.
  const store = stored.stateful && b.store !== false;
  const effort = b.reasoning?.effort ?? undefined;
  let request: ChatRequest;
  try {
    request = validateChatRequest(
      {
        model: b.model,
        messages,
        tools: declared.tools,
        ...(declared.hosted.length > 0 ? { hostedTools: declared.hosted } : {}),
        toolChoice: toolChoice === undefined ? undefined : canonicalChoice(toolChoice),
        sampling: { temperature: b.temperature ?? undefined, topP: b.top_p ?? undefined, maxTokens: b.max_output_tokens ?? undefined, stop: [] },
        // As on the OpenAI edge, metadata is both the labels (logs) and what OpenAI-kind providers receive.
        metadata: { userId: b.user ?? b.safety_identifier ?? undefined, labels: metadata, providerMetadata: Object.keys(metadata).length > 0 ? metadata : undefined },
        responseFormat: format === undefined ? undefined : canonicalFormat(format),
        reasoning: effort === undefined ? undefined : { effort },
        parallelToolCalls: b.parallel_tool_calls ?? undefined,
        serviceTier: b.service_tier ?? undefined,
        carried: carriedOf(b.prompt_cache_key, b.safety_identifier),
        truncation: b.truncation === "auto" ? "auto" : undefined,
      },
      limits.maxJsonDepth,
    );
  } catch (error) {
    throw error instanceof GatewayError ? inResponsesWords(error, param) : error;
  }
  const echo: ResponseEcho = {
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    metadata,
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    temperature: b.temperature ?? null,
    top_p: b.top_p ?? null,
    tool_choice: toolChoice ?? "auto",
    tools: declared.echo,
    text: { format: format ?? { type: "text" } },
    reasoning: { effort: effort ?? null, summary: b.reasoning?.summary ?? b.reasoning?.generate_summary ?? null },
    service_tier: b.service_tier ?? undefined,
    user: b.user ?? undefined,
    safety_identifier: b.safety_identifier ?? undefined,
    prompt_cache_key: b.prompt_cache_key ?? undefined,
    // Beyond the defaults (not kept, no previous response, no truncation) only: the encoder fills those in.
    ...(store ? { store } : {}),
    ...(b.previous_response_id ? { previous_response_id: b.previous_response_id } : {}),
    ...(b.truncation === "auto" ? { truncation: b.truncation } : {}),
  };
  const conversation = conversationId === undefined ? undefined : conversationRequest(json as Record<string, unknown>, conversationId, b.input, (body) => responsesRequestFrom(body, limits, stored));
  return {
    request,
    stream: b.stream === true,
    background: b.background === true,
    echo,
    origins,
    param,
    droppedParams,
    calls: declared.calls,
    ...(declared.gateway.length > 0 ? { gatewayTools: { servers: declared.gateway, via: "responses" as const } } : {}),
    store,
    ...(b.previous_response_id ? { previousId: b.previous_response_id } : {}),
    input: b.input,
    ...(conversation ? { conversation } : {}),
  };
}

/** The same from the raw body, counted and measured before it is parsed (http/read-json.ts). */
export function responsesRequestFromBody(body: Uint8Array, limits: StructureLimits): ResponsesRequest {
  return responsesRequestFrom(parseJsonBody(body, limits), limits);
}
