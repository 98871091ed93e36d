import { parseJsonBody } from "../../http/read-json.js";
import { z } from "zod";
import type { CarriedFields, ChatRequest, ResponseFormat, ToolChoice, ToolDefinition } from "../../core/chat-request.js";
import { GatewayError } from "../../core/errors.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import { validateChatRequest } from "../../core/validate.js";
import { messagesFromInput } from "./input-items.js";
import { inputParam } from "./input-paths.js";
import { invalidField, parseAt } from "./invalid-field.js";
import { refuseTool, refuseUnservedFields } from "./refused-fields.js";
import type { ReplayOrigin } from "./replay-origins.js";
import type { ResponseEcho, WireFunctionTool, WireTextFormat, WireToolChoice } from "./response-object.js";
import { inResponsesWords, responsesParam } from "./responses-errors.js";
import { functionTool, responsesBody } from "./responses-schema.js";

/** What serving one `POST /v1/responses` needs beyond the canonical request. */
export interface ResponsesRequest {
  readonly request: ChatRequest;
  readonly stream: boolean;
  /** The request fields every `response` object repeats: give it to the encoder. */
  readonly echo: ResponseEcho;
  /** Who issued the replayed reasoning: for `replayForTarget` in the pipeline's per-target `prepare`. */
  readonly origins: readonly ReplayOrigin[];
  /** A canonical field path (validation, the pipeline) as this request names it: for `toResponsesError`. */
  readonly param: (field: string) => string;
  /** Body fields the edge accepted and does not act on (responses-fields.ts), set in this body, for `sluice-dropped-params`. */
  readonly droppedParams: readonly string[];
}

function toolFrom(value: unknown, at: string): WireFunctionTool {
  const type = value !== null && typeof value === "object" ? (value as { type?: unknown }).type : undefined;
  if (type !== "function") refuseTool(type, at);
  const t = parseAt(functionTool, value, at);
  return { type: "function", name: t.name, description: t.description ?? null, parameters: t.parameters ?? null, strict: t.strict ?? null };
}

/**
 * A wire tool as a canonical one. `strict` goes upstream only when the
 * caller set it: OpenAI's own default (strict where the schema allows) is
 * not something every provider can do, and an unrequested parameter must
 * not make a provider refuse the call.
 */
function canonicalTool(t: WireFunctionTool): ToolDefinition {
  return { name: t.name, description: t.description ?? "", parameters: t.parameters ?? { type: "object", properties: {} }, strict: t.strict ?? undefined };
}

/** OpenAI's prompt-cache and safety keys, carried to OpenAI targets (core/carried-params.ts). */
function carriedOf(promptCacheKey: string | null | undefined, safetyIdentifier: string | null | undefined): CarriedFields | undefined {
  const carried: CarriedFields = {
    ...(promptCacheKey ? { promptCacheKey } : {}),
    ...(safetyIdentifier ? { safetyIdentifier } : {}),
  };
  return Object.keys(carried).length > 0 ? carried : undefined;
}

const functionChoice = z.object({ type: z.literal("function"), name: z.string() });

function toolChoiceFrom(value: unknown): WireToolChoice | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === "auto" || value === "none" || value === "required") return value;
  if (value !== null && typeof value === "object" && (value as { type?: unknown }).type === "function") {
    return { type: "function", name: parseAt(functionChoice, value, "tool_choice").name };
  }
  return invalidField("tool_choice", 'must be "auto", "none", "required" or {"type": "function", "name": …}: hosted tools and allowed_tools are not served');
}

function canonicalChoice(choice: WireToolChoice): ToolChoice {
  return typeof choice === "string" ? { type: choice } : choice;
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
export function responsesRequestFrom(json: unknown, limits: Pick<StructureLimits, "maxJsonDepth">): ResponsesRequest {
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new GatewayError("invalid_request", "request body: must be a JSON object", { field: "body" });
  }
  const droppedParams = refuseUnservedFields(json as Record<string, unknown>);
  const b = parseAt(responsesBody, json, "");
  const tools = (b.tools ?? []).map((t, i) => toolFrom(t, `tools[${i}]`));
  const toolChoice = toolChoiceFrom(b.tool_choice);
  const f = b.text?.format ?? undefined;
  const format: WireTextFormat | undefined = f?.type === "json_schema" ? { ...f, description: f.description ?? undefined, strict: f.strict ?? null } : f;
  const { messages, sources, origins } = messagesFromInput(b.input, b.instructions ?? undefined);
  const param = (field: string) => inputParam(field, sources) ?? responsesParam(field);
  const metadata = b.metadata ?? {};
  const effort = b.reasoning?.effort ?? undefined;
  let request: ChatRequest;
  try {
    request = validateChatRequest(
      {
        model: b.model,
        messages,
        tools: tools.map(canonicalTool),
        toolChoice: toolChoice === undefined ? undefined : canonicalChoice(toolChoice),
        sampling: { temperature: b.temperature ?? undefined, topP: b.top_p ?? undefined, maxTokens: b.max_output_tokens ?? undefined, stop: [] },
        // As on the OpenAI edge, metadata is both the labels (logs) and what OpenAI-kind providers receive.
        metadata: { userId: b.user ?? b.safety_identifier ?? undefined, labels: metadata, providerMetadata: Object.keys(metadata).length > 0 ? metadata : undefined },
        responseFormat: format === undefined ? undefined : canonicalFormat(format),
        reasoning: effort === undefined ? undefined : { effort },
        parallelToolCalls: b.parallel_tool_calls ?? undefined,
        serviceTier: b.service_tier ?? undefined,
        carried: carriedOf(b.prompt_cache_key, b.safety_identifier),
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
    tools,
    text: { format: format ?? { type: "text" } },
    reasoning: { effort: effort ?? null, summary: b.reasoning?.summary ?? b.reasoning?.generate_summary ?? null },
    service_tier: b.service_tier ?? undefined,
    user: b.user ?? undefined,
    safety_identifier: b.safety_identifier ?? undefined,
    prompt_cache_key: b.prompt_cache_key ?? undefined,
  };
  return { request, stream: b.stream === true, echo, origins, param, droppedParams };
}

/** The same from the raw body, counted and measured before it is parsed (http/read-json.ts). */
export function responsesRequestFromBody(body: Uint8Array, limits: StructureLimits): ResponsesRequest {
  return responsesRequestFrom(parseJsonBody(body, limits), limits);
}
