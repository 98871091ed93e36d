import { z } from "zod";
import { MIN_THINKING_BUDGET_TOKENS } from "../../core/chat-request.js";

/**
 * The Messages API request body as far as Sluice can honour or carry it,
 * following the rows of anthropic-fields.ts. Every object is strict: a
 * field that would change the answer if ignored (citations, containers,
 * Anthropic-defined tools other than its server tools, …) fails the request with its name instead of being dropped,
 * because a client that asked for it would otherwise get a different answer
 * than it asked for without knowing. Fields that change no answer (prompt
 * caching, deferred tools, context management) are carried to targets
 * that take them. Fields that carry nothing when null (`citations: []`,
 * which SDKs send back when a response's blocks are replayed) are accepted.
 */

const NOT_SUPPORTED = "not supported by this gateway";

/** A field accepted only when absent or null. */
function refused(reason = NOT_SUPPORTED) {
  return z.null({ error: reason }).optional();
}

/** A breakpoint: carried to Anthropic targets, dropped by name elsewhere (carried-params.ts). */
const cacheControl = z.strictObject({ type: z.literal("ephemeral"), ttl: z.enum(["5m", "1h"]).nullish() }).nullish();

/** `"text"` as shorthand for one text block, as the API allows for content and system. */
function textShorthand(value: unknown): unknown {
  return typeof value === "string" ? (value === "" ? [] : [{ type: "text", text: value }]) : value;
}

function blocks<T extends z.ZodType>(block: T) {
  return z.preprocess(textShorthand, z.array(block, { error: "must be a string or an array of content blocks" }));
}

const text = z.strictObject({
  type: z.literal("text"),
  text: z.string(),
  cache_control: cacheControl,
  citations: z.array(z.never({ error: `citations are ${NOT_SUPPORTED}` })).nullish(),
});

const IMAGE_MEDIA_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"] as const;

const image = z.strictObject({
  type: z.literal("image"),
  source: z.discriminatedUnion("type", [z.strictObject({ type: z.literal("base64"), media_type: z.enum(IMAGE_MEDIA_TYPES), data: z.string().min(1) }), z.strictObject({ type: z.literal("url"), url: z.string() })]),
  cache_control: cacheControl,
});

const toolResult = z.strictObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string().min(1),
  // Every provider takes a tool result as text: images in results have nowhere to go.
  content: blocks(z.discriminatedUnion("type", [text])).optional(),
  is_error: z.boolean().nullish(),
  cache_control: cacheControl,
  toolset_name: refused(),
});

// A missing or empty signature is one no provider can verify: the block is dropped (from-anthropic), not refused.
const thinking = z.strictObject({ type: z.literal("thinking"), thinking: z.string(), signature: z.string().nullish() });
const redactedThinking = z.strictObject({ type: z.literal("redacted_thinking"), data: z.string().min(1) });

const toolUse = z.strictObject({
  type: z.literal("tool_use"),
  id: z.string().min(1),
  name: z.string(),
  input: z.record(z.string(), z.unknown(), { error: "must be a JSON object" }),
  cache_control: cacheControl,
  // Responses name the caller; replayed as is, only a direct call means anything here.
  caller: z.strictObject({ type: z.literal("direct", { error: "only direct tool calls can be replayed through this gateway" }) }).nullish(),
  toolset_name: refused(),
});

/** A server tool's call or result from an earlier turn: kept whole for an Anthropic target, dropped (named) elsewhere. */
const serverBlock = z.looseObject({
  type: z.enum(["server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result", "bash_code_execution_tool_result", "text_editor_code_execution_tool_result"]),
});

/** A call the gateway ran for an earlier turn (the MCP connector's blocks, to-anthropic.ts), sent back with the conversation. */
const mcpToolUse = z.strictObject({
  type: z.literal("mcp_tool_use"),
  id: z.string().min(1).max(256),
  name: z.string().min(1).max(128),
  server_name: z.string().min(1).max(64),
  input: z.record(z.string(), z.unknown()),
  cache_control: cacheControl,
});
const mcpToolResult = z.strictObject({
  type: z.literal("mcp_tool_result"),
  tool_use_id: z.string().min(1).max(256),
  is_error: z.boolean().nullish(),
  content: z.union([z.string(), z.array(z.looseObject({ type: z.literal("text"), text: z.string() }))]).nullish(),
  cache_control: cacheControl,
});

const userBlock = z.discriminatedUnion("type", [text, image, toolResult]);
const assistantBlock = z.discriminatedUnion("type", [text, thinking, redactedThinking, toolUse, mcpToolUse, mcpToolResult, serverBlock]);
const systemBlocks = blocks(z.discriminatedUnion("type", [text]));

const message = z.discriminatedUnion("role", [
  z.strictObject({ role: z.literal("user"), content: blocks(userBlock) }),
  z.strictObject({ role: z.literal("assistant"), content: blocks(assistantBlock) }),
  z.strictObject({ role: z.literal("system"), content: systemBlocks }),
]);

/** Anthropic's server tools, which the provider runs itself: carried as declared (providers/hosted-tools.ts). */
export const SERVER_TOOL_TYPE = /^(web_search|web_fetch|code_execution)_\d{8}$/;

const tool = z
  .strictObject({
    // First, so another Anthropic-defined tool (bash_…, a computer tool) is refused for its type rather than for its missing input_schema.
    type: z
      .string()
      .refine((type) => type === "custom" || SERVER_TOOL_TYPE.test(type), {
        error: `only custom tools (name, description, input_schema) and the server tools web_search_*, web_fetch_* and code_execution_* are supported; other Anthropic-defined tools are ${NOT_SUPPORTED}`,
      })
      .nullish(),
    name: z.string(),
    description: z.string().nullish(),
    input_schema: z.record(z.string(), z.unknown(), { error: "must be a JSON Schema object" }).optional(),
    strict: z.boolean().nullish(),
    cache_control: cacheControl,
    defer_loading: z.boolean().nullish(),
    eager_input_streaming: z.boolean().nullish(),
    // A server tool's own settings.
    max_uses: z.int().min(1).nullish(),
    allowed_domains: z.array(z.string()).nullish(),
    blocked_domains: z.array(z.string()).nullish(),
    user_location: z.record(z.string(), z.unknown()).nullish(),
    citations: z.record(z.string(), z.unknown()).nullish(),
    max_content_tokens: z.int().min(1).nullish(),
  })
  .superRefine((t, ctx) => {
    const server = typeof t.type === "string" && SERVER_TOOL_TYPE.test(t.type);
    if (!server && t.input_schema === undefined) ctx.addIssue({ code: "custom", path: ["input_schema"], message: "must be a JSON Schema object" });
  });

const parallel = { disable_parallel_tool_use: z.boolean().nullish() };
const toolChoice = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("auto"), ...parallel }),
  z.strictObject({ type: z.literal("any"), ...parallel }),
  z.strictObject({ type: z.literal("tool"), name: z.string(), ...parallel }),
  z.strictObject({ type: z.literal("none") }),
]);

/** Anthropic's documented floor for a thinking budget. */

const display = z.enum(["summarized", "omitted", "updates"]).nullish();
const thinkingConfig = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("enabled"), budget_tokens: z.int().min(MIN_THINKING_BUDGET_TOKENS), display }),
  z.strictObject({ type: z.literal("adaptive"), display }),
  z.strictObject({ type: z.literal("disabled") }),
]);

const countTokensFields = {
  model: z.string().min(1, { error: "must name a model" }),
  messages: z.array(message).min(1, { error: "must contain at least one message" }),
  system: systemBlocks.nullish(),
  tools: z.array(tool).nullish(),
  tool_choice: toolChoice.nullish(),
  thinking: thinkingConfig.nullish(),
  context_management: z.record(z.string(), z.unknown(), { error: "must be an object" }).nullish(),
  output_config: z
    .strictObject({
      effort: z.enum(["low", "medium", "high", "max", "xhigh"]).nullish(),
      format: z.strictObject({ type: z.literal("json_schema"), schema: z.record(z.string(), z.unknown(), { error: "must be a JSON Schema object" }) }).nullish(),
    })
    .nullish(),
};

/** `POST /v1/messages`. Ranges are Anthropic's own, so a request valid here is valid there. */
export const messagesBody = z.strictObject({
  ...countTokensFields,
  max_tokens: z.int().min(1),
  stream: z.boolean().nullish(),
  temperature: z.number().min(0).max(1).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  top_k: z.int().min(1).nullish(),
  stop_sequences: z.array(z.string()).nullish(),
  metadata: z.strictObject({ user_id: z.string().nullish() }).nullish(),
  service_tier: z.enum(["auto", "standard_only"]).nullish(),
  // Anthropic's MCP connector: servers the gateway runs tools of (mcp-servers.ts reads them).
  mcp_servers: z.array(z.unknown()).max(64).nullish(),
  // A message thread (the SDK's tool runner): the gateway stores none; from-anthropic.ts drops `create`, refuses `continue`.
  thread: z.discriminatedUnion("type", [z.strictObject({ type: z.literal("create") }), z.strictObject({ type: z.literal("continue"), previous_message_id: z.string() })]).nullish(),
});

/** `POST /v1/messages/count_tokens`: the prompt without the generation settings. */
export const countTokensBody = z.strictObject(countTokensFields);

export type CountTokensBody = z.infer<typeof countTokensBody>;
export type AnthropicMessageParam = z.infer<typeof message>;
export type SystemBlocks = z.infer<typeof systemBlocks>;
export type ToolChoiceBody = z.infer<typeof toolChoice>;
export type ThinkingBody = z.infer<typeof thinkingConfig>;
export type CacheControlBody = z.infer<typeof cacheControl>;
export type ToolBody = z.infer<typeof tool>;
