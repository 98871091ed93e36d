import { z } from "zod";

/**
 * What a target can do (docs/routing.md, "Capabilities"). Every field is
 * optional: unset means "as the built-in table says for this model name",
 * and a model the table does not know is assumed able, so routing never
 * refuses what it cannot judge.
 */
export const capabilitiesSchema = z.strictObject({
  /** Input plus output tokens the model takes in one request. */
  contextWindow: z.number().int().min(256).max(100_000_000).optional(),
  /** Output tokens the model produces at most in one answer. */
  maxOutputTokens: z.number().int().min(1).max(10_000_000).optional(),
  /** Calls tools (function calling). */
  tools: z.boolean().optional(),
  /** Reads images. */
  vision: z.boolean().optional(),
  /** Follows a JSON schema strictly (structured outputs). */
  jsonSchema: z.boolean().optional(),
  /** Takes reasoning controls (effort, a thinking budget). */
  reasoning: z.boolean().optional(),
  /** Caches prompt prefixes at a lower price. */
  promptCaching: z.boolean().optional(),
});

/** How an alias fits a conversation longer than its targets' windows (docs/routing.md, "Fitting the context window"). */
export const CONTEXT_STRATEGIES = ["reject", "truncate", "summarize"] as const;

export const contextSchema = z.strictObject({
  /** `reject`: a request that fits no target is refused; `truncate`: its oldest turns are dropped until it fits; `summarize`: they are replaced by a summary. */
  strategy: z.enum(CONTEXT_STRATEGIES).default("reject"),
  /** With `summarize`: the alias that writes the summary (a cheap model). */
  summarizer: z.string().min(1).optional(),
  /** Never drop the system prompt. */
  keepSystem: z.boolean().default(true),
  /** The last N turns are never dropped (a request that does not fit with them is refused). */
  keepLastTurns: z.number().int().min(1).max(10_000).default(2),
  /** Output tokens kept free in the window when the request sets no max_tokens. */
  reserveOutputTokens: z.number().int().min(0).max(10_000_000).default(1_024),
});
