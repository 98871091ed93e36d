/** Canonical field paths (protobuf names) as the Messages API names them. */
const PARAM: Record<string, string> = {
  "sampling.temperature": "temperature",
  "sampling.top_p": "top_p",
  "sampling.top_k": "top_k",
  "sampling.max_tokens": "max_tokens",
  "sampling.stop": "stop_sequences",
  "tool_choice.function_name": "tool_choice.name",
  parallel_tool_calls: "tool_choice.disable_parallel_tool_use",
  "reasoning.budget_tokens": "thinking.budget_tokens",
  // The edge asks for an effort only through thinking: adaptive (high) or disabled (none).
  "reasoning.effort": "thinking.type",
  "tools.strict": "tools[].strict",
  "messages.is_error": "messages[].content[].is_error",
  "metadata.labels": "metadata",
  response_format: "output_config.format",
  "tools.defer_loading": "tools[].defer_loading",
  "tools.eager_input_streaming": "tools[].eager_input_streaming",
};

/**
 * A canonical field as an Anthropic client knows it: `sampling.top_k` →
 * `top_k`, `tools[3].parameters` → `tools[3].input_schema`. For refusals
 * that arise after decoding (a provider that cannot honour `top_k`) and the
 * dropped-parameters header; fields an Anthropic request cannot set pass
 * through unchanged.
 */
export function anthropicParam(field: string): string {
  return PARAM[field] ?? field.replace(/^tools\[(\d+)\]\.parameters/, "tools[$1].input_schema");
}

/**
 * Gateway messages start with the field(s) at fault (`a: …`, `a, b: …`):
 * says them the way `rename` does, when `field` is among them (so a message
 * that merely contains a colon is left alone).
 */
export function renameLeadingFields(message: string, field: string, rename: (field: string) => string): string {
  const colon = message.indexOf(": ");
  if (colon <= 0) return message;
  const fields = message.slice(0, colon).split(", ");
  if (!fields.includes(field)) return message;
  return `${fields.map(rename).join(", ")}${message.slice(colon)}`;
}
