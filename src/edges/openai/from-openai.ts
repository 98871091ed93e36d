import { z } from "zod";
import { type CacheMark, type ChatMessage, type ChatRequest, type ContentPart, PROVIDER_KINDS, type ResponseFormat, type ToolChoice } from "../../core/chat-request.js";
import { clipClientValue } from "../../core/client-text.js";
import { GatewayError } from "../../core/errors.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import { validateChatRequest } from "../../core/validate.js";
import { droppedFields } from "./request-fields.js";

// Inside messages and tools unknown fields are ignored (z.object strips
// them), as OpenAI's API does; at the top level request-fields.ts decides.
// Anthropic-style breakpoints, as OpenAI-compatible clients put them on parts and tools: carried (chat-fields.ts).
const cacheControl = z.object({ type: z.literal("ephemeral"), ttl: z.enum(["5m", "1h"]).nullish() }).nullish();
const textPart = z.object({ type: z.literal("text"), text: z.string(), cache_control: cacheControl });
const imagePart = z.object({
  type: z.literal("image_url"),
  image_url: z.object({ url: z.string(), detail: z.enum(["auto", "low", "high"]).optional() }),
  cache_control: cacheControl,
});
const content = z.union([z.string(), z.array(z.union([textPart, imagePart]))]);
const toolCall = z.object({
  id: z.string(),
  type: z.literal("function").optional(),
  function: z.object({ name: z.string(), arguments: z.string() }),
});

const message = z.discriminatedUnion("role", [
  z.object({ role: z.enum(["system", "developer"]), content, name: z.string().optional() }),
  z.object({ role: z.literal("user"), content, name: z.string().optional() }),
  z.object({
    role: z.literal("assistant"),
    content: content.nullish(),
    name: z.string().optional(),
    tool_calls: z.array(toolCall).optional(),
  }),
  z.object({ role: z.literal("tool"), content, tool_call_id: z.string() }),
]);

const body = z.object({
  model: z.string(),
  messages: z.array(message),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().optional(), resumable: z.boolean().optional() }).nullish(),
  tools: z
    .array(
      z.object({
        type: z.literal("function"),
        function: z.object({
          name: z.string(),
          description: z.string().optional(),
          parameters: z.record(z.string(), z.unknown()).optional(),
          strict: z.boolean().nullish(),
        }),
        cache_control: cacheControl,
      }),
    )
    .nullish(),
  tool_choice: z.union([z.enum(["auto", "none", "required"]), z.object({ type: z.literal("function"), function: z.object({ name: z.string() }) })]).nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  max_tokens: z.number().int().nullish(),
  max_completion_tokens: z.number().int().nullish(),
  stop: z.union([z.string(), z.array(z.string())]).nullish(),
  seed: z.number().int().nullish(),
  user: z.string().nullish(),
  n: z.number().int().nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  response_format: z
    .discriminatedUnion("type", [
      z.object({ type: z.literal("text") }),
      z.object({ type: z.literal("json_object") }),
      z.object({
        type: z.literal("json_schema"),
        json_schema: z.object({
          name: z.string(),
          description: z.string().optional(),
          schema: z.record(z.string(), z.unknown()).optional(),
          strict: z.boolean().nullish(),
        }),
      }),
    ])
    .nullish(),
  reasoning_effort: z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]).nullish(),
  presence_penalty: z.number().nullish(),
  frequency_penalty: z.number().nullish(),
  logit_bias: z.record(z.string(), z.number()).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  service_tier: z.enum(["auto", "default", "flex", "priority", "scale"]).nullish(),
  prompt_cache_key: z.string().nullish(),
  safety_identifier: z.string().nullish(),
  // Sluice extensions (OpenAI has no field for these): a thinking budget and
  // reasoning visibility, and the per-provider escape hatch.
  reasoning: z
    .object({
      budget_tokens: z.number().int().min(0).optional(),
      include_reasoning: z.boolean().optional(),
    })
    .nullish(),
  provider_options: z.partialRecord(z.enum(PROVIDER_KINDS), z.record(z.string(), z.unknown())).nullish(),
});

/** The top-level fields the facade acts on. */
const HONOURED_FIELDS: ReadonlySet<string> = new Set(Object.keys(body.shape));

/** What the facade needs beyond the canonical request. */
export interface OpenAiChatRequest {
  readonly request: ChatRequest;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  /** `stream_options.resumable` (a Sluice extension): keep the stream for GET /v1/chat/completions/{id}/stream. */
  readonly resumable: boolean;
  /** Fields the SDK declares that the facade does not act on, set in this body (OpenAI names), for `sluice-dropped-params`. */
  readonly droppedParams: readonly string[];
}

function param(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, key) => (typeof key === "number" ? `${out}[${key}]` : out ? `${out}.${String(key)}` : String(key)), "");
}

function cacheMark(control: z.infer<typeof cacheControl>): { readonly cache?: CacheMark } {
  return control ? { cache: control.ttl ? { ttl: control.ttl } : {} } : {};
}

function parts(value: z.infer<typeof content> | null | undefined): ContentPart[] {
  if (value === null || value === undefined) return [];
  if (typeof value === "string") return value === "" ? [] : [{ type: "text", text: value }];
  return value.map((p) =>
    p.type === "text" ? { type: "text", text: p.text, ...cacheMark(p.cache_control) } : { type: "image_url", url: p.image_url.url, ...(p.image_url.detail ? { detail: p.image_url.detail } : {}), ...cacheMark(p.cache_control) },
  );
}

function toMessage(m: z.infer<typeof message>): ChatMessage {
  switch (m.role) {
    case "system":
    case "developer":
      return { role: "system", content: parts(m.content), ...(m.name ? { name: m.name } : {}) };
    case "user":
      return { role: "user", content: parts(m.content), ...(m.name ? { name: m.name } : {}) };
    case "assistant":
      return {
        role: "assistant",
        content: parts(m.content),
        ...(m.name ? { name: m.name } : {}),
        ...(m.tool_calls?.length ? { toolCalls: m.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })) } : {}),
      };
    case "tool": {
      const content = parts(m.content);
      // A mark on any part of a result marks the result (Anthropic's tool_result block).
      const mark = content.findLast((p) => p.type !== "reasoning" && p.type !== "hosted_item" && p.cache !== undefined);
      return { role: "tool", content, toolCallId: m.tool_call_id, ...(mark && mark.type !== "reasoning" && mark.type !== "hosted_item" ? { cache: mark.cache } : {}) };
    }
  }
}

function responseFormat(format: NonNullable<z.infer<typeof body>["response_format"]>): ResponseFormat {
  if (format.type !== "json_schema") return { type: format.type };
  const s = format.json_schema;
  return {
    type: "json_schema",
    name: s.name,
    ...(s.description ? { description: s.description } : {}),
    // OpenAI's own default for a schema-less json_schema: any object.
    schema: s.schema ?? { type: "object" },
    ...(s.strict === null || s.strict === undefined ? {} : { strict: s.strict }),
  };
}

/** Drops null and undefined values, so "absent" has one spelling downstream. */
function present<T extends Record<string, unknown>>(fields: T): { [K in keyof T]?: NonNullable<T[K]> } {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== null && v !== undefined)) as { [K in keyof T]?: NonNullable<T[K]> };
}

function toolChoice(choice: z.infer<typeof body>["tool_choice"]): ToolChoice | undefined {
  if (!choice) return undefined;
  if (typeof choice === "string") return { type: choice };
  return { type: "function", name: choice.function.name };
}

/**
 * A Chat Completions body as a validated canonical request. Errors name the
 * OpenAI parameter (`messages[0].content`) the way OpenAI's own 400s do; a
 * top-level field that is no Chat Completions parameter is one of them.
 */
export function chatRequestFromOpenAi(json: unknown, limits: Pick<StructureLimits, "maxJsonDepth">): OpenAiChatRequest {
  const droppedParams = json !== null && typeof json === "object" && !Array.isArray(json) ? droppedFields(json as Record<string, unknown>, HONOURED_FIELDS) : [];
  const parsed = body.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    // Paths run through client-chosen keys and zod quotes unknown keys: both are cut like any echoed value.
    const field = clipClientValue(param(issue.path));
    const what = field === "" ? "request body" : field;
    throw new GatewayError("invalid_request", `${what}: ${clipClientValue(issue.message)}`, { field: field || "body" });
  }
  const b = parsed.data;
  if (b.n !== null && b.n !== undefined && b.n !== 1) throw new GatewayError("invalid_request", "n: only n=1 is supported", { field: "n" });
  const maxTokens = b.max_completion_tokens ?? b.max_tokens;
  if (b.top_logprobs !== null && b.top_logprobs !== undefined && b.logprobs !== true) {
    throw new GatewayError("invalid_request", "top_logprobs: requires logprobs: true", { field: "top_logprobs" });
  }
  const reasoning = present({
    effort: b.reasoning_effort,
    budgetTokens: b.reasoning?.budget_tokens,
    includeReasoning: b.reasoning?.include_reasoning,
  });
  const metadata = b.metadata ?? {};
  const request = validateChatRequest(
    {
      model: b.model,
      messages: b.messages.map(toMessage),
      tools: (b.tools ?? []).map((t) => ({
        name: t.function.name,
        description: t.function.description ?? "",
        parameters: t.function.parameters ?? { type: "object", properties: {} },
        ...(t.function.strict === null || t.function.strict === undefined ? {} : { strict: t.function.strict }),
        ...cacheMark(t.cache_control),
      })),
      ...(b.tool_choice ? { toolChoice: toolChoice(b.tool_choice)! } : {}),
      sampling: {
        ...(b.temperature === null || b.temperature === undefined ? {} : { temperature: b.temperature }),
        ...(b.top_p === null || b.top_p === undefined ? {} : { topP: b.top_p }),
        ...(maxTokens === null || maxTokens === undefined ? {} : { maxTokens }),
        stop: b.stop === null || b.stop === undefined ? [] : typeof b.stop === "string" ? [b.stop] : b.stop,
        ...(b.seed === null || b.seed === undefined ? {} : { seed: b.seed }),
        ...present({ presencePenalty: b.presence_penalty, frequencyPenalty: b.frequency_penalty }),
        ...(b.logit_bias && Object.keys(b.logit_bias).length > 0 ? { logitBias: b.logit_bias } : {}),
      },
      // OpenAI's metadata is both our labels (logs) and what OpenAI-kind providers receive.
      metadata: {
        ...(b.user ? { userId: b.user } : {}),
        labels: metadata,
        ...(Object.keys(metadata).length > 0 ? { providerMetadata: metadata } : {}),
      },
      ...(b.response_format ? { responseFormat: responseFormat(b.response_format) } : {}),
      ...(Object.keys(reasoning).length > 0 ? { reasoning } : {}),
      ...(b.logprobs === true ? { logprobs: present({ topLogprobs: b.top_logprobs }) } : {}),
      ...present({ parallelToolCalls: b.parallel_tool_calls, serviceTier: b.service_tier }),
      ...(b.provider_options ? { providerOptions: b.provider_options } : {}),
      ...(b.prompt_cache_key || b.safety_identifier ? { carried: { ...(b.prompt_cache_key ? { promptCacheKey: b.prompt_cache_key } : {}), ...(b.safety_identifier ? { safetyIdentifier: b.safety_identifier } : {}) } } : {}),
    },
    limits.maxJsonDepth,
  );
  return {
    request,
    stream: b.stream === true,
    includeUsage: b.stream_options?.include_usage === true,
    resumable: b.stream_options?.resumable === true,
    droppedParams,
  };
}
