/** Canonical field paths (protobuf names) as the Gemini API names them. */
const PARAM: Record<string, string> = {
  "sampling.temperature": "generationConfig.temperature",
  "sampling.top_p": "generationConfig.topP",
  "sampling.top_k": "generationConfig.topK",
  "sampling.max_tokens": "generationConfig.maxOutputTokens",
  "sampling.stop": "generationConfig.stopSequences",
  "sampling.seed": "generationConfig.seed",
  "sampling.presence_penalty": "generationConfig.presencePenalty",
  "sampling.frequency_penalty": "generationConfig.frequencyPenalty",
  "tool_choice.function_name": "toolConfig.functionCallingConfig.allowedFunctionNames",
  tool_choice: "toolConfig.functionCallingConfig",
  "reasoning.budget_tokens": "generationConfig.thinkingConfig.thinkingBudget",
  "reasoning.effort": "generationConfig.thinkingConfig.thinkingLevel",
  "reasoning.include_reasoning": "generationConfig.thinkingConfig.includeThoughts",
  response_format: "generationConfig.responseJsonSchema",
  "tools.strict": "tools[].functionDeclarations[]",
  "metadata.labels": "labels",
  messages: "contents",
};

/**
 * A canonical field as a Gemini client knows it: `sampling.top_k` →
 * `generationConfig.topK`, `tools[3].parameters` → `tools[].functionDeclarations[3].parameters`.
 * Used for refusals that arise after decoding and for the
 * `sluice-dropped-params` header; fields with no Gemini name pass unchanged.
 */
export function geminiParam(field: string): string {
  const named = PARAM[field];
  if (named !== undefined) return named;
  if (field.startsWith("messages[")) return "contents";
  return field.replace(/^tools\[(\d+)\]\.(\w+)/, "tools[].functionDeclarations[$1].$2");
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
