import { z } from "zod";

/**
 * The shapes of a `POST /v1/responses` body this edge serves. Items and
 * their parts ignore fields they do not use (the `id`, `status` and
 * `annotations` of output items sent back as input); the body's own fields
 * are checked by name first (refused-fields.ts) and `text` and `reasoning`
 * strictly, so no setting that would change the answer is silently ignored.
 */

/** Message content: parts are checked one by one (`input-items.ts`), so a refusal can say what to send instead. */
const content = z.union([z.string(), z.array(z.unknown())]);

export const messageItem = z.object({ type: z.literal("message").optional(), role: z.enum(["user", "system", "developer", "assistant"]), content });

export const functionCallItem = z.object({
  type: z.literal("function_call"),
  call_id: z.string(),
  name: z.string(),
  /** The namespace of a `namespace` tool's member: the canonical name is the flat `namespace__name`. */
  namespace: z.string().nullish(),
  arguments: z.string(),
});

export const customToolCallItem = z.object({
  type: z.literal("custom_tool_call"),
  call_id: z.string(),
  name: z.string(),
  namespace: z.string().nullish(),
  input: z.string(),
});

export const customToolCallOutputItem = z.object({
  type: z.literal("custom_tool_call_output"),
  call_id: z.string(),
  output: content,
});

/** A hosted tool's item from an earlier turn: kept whole, for a target that runs the tool (providers/hosted-tools.ts). */
export const hostedCallItem = z.looseObject({
  type: z.enum(["web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call"]),
  id: z.string(),
});

export const functionCallOutputItem = z.object({
  type: z.literal("function_call_output"),
  call_id: z.string(),
  output: content,
});

export const reasoningItem = z.object({
  type: z.literal("reasoning"),
  summary: z.array(z.object({ type: z.literal("summary_text"), text: z.string() })).optional(),
  content: z.array(z.object({ type: z.literal("reasoning_text"), text: z.string() })).nullish(),
  encrypted_content: z.string().nullish(),
});

export type MessageItem = z.infer<typeof messageItem>;
export type FunctionCallItem = z.infer<typeof functionCallItem>;
export type FunctionCallOutputItem = z.infer<typeof functionCallOutputItem>;
export type ReasoningItem = z.infer<typeof reasoningItem>;

export const functionTool = z.object({
  type: z.literal("function"),
  name: z.string(),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});

export const textFormat = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text") }),
  z.object({ type: z.literal("json_object") }),
  z.object({
    type: z.literal("json_schema"),
    name: z.string(),
    description: z.string().nullish(),
    schema: z.record(z.string(), z.unknown()),
    strict: z.boolean().nullish(),
  }),
]);

const effort = z.enum(["none", "minimal", "low", "medium", "high", "xhigh"]);
const summary = z.enum(["auto", "concise", "detailed"]);

/** The body after its field names were checked; `input` items and `tools` are checked one by one. */
export const responsesBody = z.object({
  model: z.string(),
  input: z.union([z.string(), z.array(z.unknown())]),
  instructions: z.string().nullish(),
  tools: z.array(z.unknown()).nullish(),
  tool_choice: z.unknown().optional(),
  parallel_tool_calls: z.boolean().nullish(),
  // Strict: an unknown setting here would change the answer, so it is refused rather than ignored.
  text: z.strictObject({ format: textFormat.nullish(), verbosity: z.null().optional() }).nullish(),
  reasoning: z.strictObject({ effort: effort.nullish(), summary: summary.nullish(), generate_summary: summary.nullish() }).nullish(),
  max_output_tokens: z.number().int().nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  user: z.string().nullish(),
  safety_identifier: z.string().nullish(),
  prompt_cache_key: z.string().nullish(),
  service_tier: z.enum(["auto", "default", "flex", "priority", "scale"]).nullish(),
  truncation: z.enum(["auto", "disabled"]).nullish(),
  stream: z.boolean().nullish(),
  store: z.boolean().nullish(),
  include: z.array(z.literal("reasoning.encrypted_content")).nullish(),
  previous_response_id: z.string().nullish(),
  conversation: z.union([z.string(), z.object({ id: z.string() })]).nullish(),
  background: z.boolean().nullish(),
});

export type ResponsesBody = z.infer<typeof responsesBody>;
