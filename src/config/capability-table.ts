import type { z } from "zod";
import type { capabilitiesSchema } from "./capabilities-schema.js";

/** What a target can do; an unset field is unknown, and unknown is taken as able. */
export type Capabilities = Readonly<z.output<typeof capabilitiesSchema>>;

/**
 * Published limits of well-known models, by model-id prefix (the longest
 * matching prefix wins; ids are compared in lower case, without a
 * `models/` path). Declared capabilities override any field. A model that
 * matches nothing gets no entry: every field unknown, every request
 * admitted, as before capabilities existed.
 */
export const CAPABILITY_TABLE: ReadonlyArray<readonly [prefix: string, capabilities: Capabilities]> = [
  ["gpt-3.5-turbo", { contextWindow: 16_385, maxOutputTokens: 4_096, tools: true, vision: false, jsonSchema: false, reasoning: false }],
  ["gpt-4o", { contextWindow: 128_000, maxOutputTokens: 16_384, tools: true, vision: true, jsonSchema: true, reasoning: false, promptCaching: true }],
  ["gpt-4.1", { contextWindow: 1_047_576, maxOutputTokens: 32_768, tools: true, vision: true, jsonSchema: true, reasoning: false, promptCaching: true }],
  ["gpt-5", { contextWindow: 400_000, maxOutputTokens: 128_000, tools: true, vision: true, jsonSchema: true, reasoning: true, promptCaching: true }],
  ["o1", { contextWindow: 200_000, maxOutputTokens: 100_000, tools: true, vision: true, jsonSchema: true, reasoning: true, promptCaching: true }],
  ["o3", { contextWindow: 200_000, maxOutputTokens: 100_000, tools: true, vision: true, jsonSchema: true, reasoning: true, promptCaching: true }],
  ["o4-mini", { contextWindow: 200_000, maxOutputTokens: 100_000, tools: true, vision: true, jsonSchema: true, reasoning: true, promptCaching: true }],
  ["claude-3-5", { contextWindow: 200_000, maxOutputTokens: 8_192, tools: true, vision: true, reasoning: false, promptCaching: true }],
  ["claude-3-7-sonnet", { contextWindow: 200_000, maxOutputTokens: 64_000, tools: true, vision: true, reasoning: true, promptCaching: true }],
  ["claude-sonnet-4", { contextWindow: 200_000, maxOutputTokens: 64_000, tools: true, vision: true, reasoning: true, promptCaching: true }],
  ["claude-opus-4", { contextWindow: 200_000, maxOutputTokens: 32_000, tools: true, vision: true, reasoning: true, promptCaching: true }],
  ["claude-haiku-4", { contextWindow: 200_000, maxOutputTokens: 64_000, tools: true, vision: true, reasoning: true, promptCaching: true }],
  ["gemini-1.5-pro", { contextWindow: 2_097_152, maxOutputTokens: 8_192, tools: true, vision: true, jsonSchema: true, reasoning: false, promptCaching: true }],
  ["gemini-1.5-flash", { contextWindow: 1_048_576, maxOutputTokens: 8_192, tools: true, vision: true, jsonSchema: true, reasoning: false, promptCaching: true }],
  ["gemini-2.0-flash", { contextWindow: 1_048_576, maxOutputTokens: 8_192, tools: true, vision: true, jsonSchema: true, reasoning: false, promptCaching: true }],
  ["gemini-2.5", { contextWindow: 1_048_576, maxOutputTokens: 65_536, tools: true, vision: true, jsonSchema: true, reasoning: true, promptCaching: true }],
  ["llama-3.1", { contextWindow: 131_072, tools: true, vision: false, reasoning: false }],
  ["llama-3.3", { contextWindow: 131_072, tools: true, vision: false, reasoning: false }],
  ["qwen2.5", { contextWindow: 32_768, tools: true, vision: false, reasoning: false }],
];

/** The table's entry for a model id, or none. */
export function builtInCapabilities(model: string): Capabilities {
  const id = model.toLowerCase().replace(/^models\//, "");
  let best: (typeof CAPABILITY_TABLE)[number] | undefined;
  for (const entry of CAPABILITY_TABLE) if (id.startsWith(entry[0]) && (!best || entry[0].length > best[0].length)) best = entry;
  return best?.[1] ?? {};
}
