import { z } from "zod";

/**
 * What a target can do (docs/routing.md, "Capabilities"). Every field is
 * optional: unset means "as the model catalog says for this model",
 * and a model the catalog does not know is assumed able, so routing never
 * refuses what it cannot judge.
 */
export const capabilitiesSchema = z
  .strictObject({
    contextWindow: z.number().int().min(256).max(100_000_000).optional().meta({ description: "Input plus output tokens in one request.", unset: "the catalog entry's, else unknown" }),
    maxOutputTokens: z.number().int().min(1).max(10_000_000).optional().meta({ description: "Output tokens in one answer (a request whose `max_tokens` asks more is not sent here).", unset: "the catalog entry's, else unknown" }),
    tools: z.boolean().optional().meta({ description: "Calls tools.", unset: "the catalog entry's, else unknown" }),
    vision: z.boolean().optional().meta({ description: "Reads images.", unset: "the catalog entry's, else unknown" }),
    jsonSchema: z.boolean().optional().meta({ description: "Follows a strict JSON schema (structured outputs).", unset: "the catalog entry's, else unknown" }),
    reasoning: z.boolean().optional().meta({ description: "Takes reasoning controls (effort, thinking budget).", unset: "the catalog entry's, else unknown" }),
    promptCaching: z.boolean().optional().meta({ description: "Caches prompt prefixes at a lower price (reported in `ListModels`).", unset: "the catalog entry's, else unknown" }),
  })
  .meta({
    group: "capabilities",
    title: "Capabilities",
    description:
      "What a target can do ([Capabilities](routing.md#capabilities)). A request that needs what a target lacks is not sent there; one that no target can serve is refused with `FAILED_PRECONDITION` / 400. Each unset field is the [model catalog](model-catalog.md) entry's; unknown is taken as able.",
  });

/** How an alias fits a conversation longer than its targets' windows (docs/routing.md, "Fitting the context window"). */
export const CONTEXT_STRATEGIES = ["reject", "truncate", "summarize"] as const;

export const contextSchema = z.strictObject({
  strategy: z.enum(CONTEXT_STRATEGIES).default("reject").meta({
    description:
      "`reject`: refused with `FAILED_PRECONDITION` / 400 before any upstream call; `truncate`: the oldest turns are dropped until it fits the largest window, and the response says `sluice-context: truncated=K`; `summarize`: they are replaced by a summary from `summarizer` (`sluice-context: summarized=K`), falling back to `truncate` when the summary fails.",
  }),
  summarizer: z.string().min(1).optional().meta({
    description: "With `summarize`: the alias (a cheap model) that writes the summary of the dropped turns, called as the same key (its limits and budget count it, and it has its own usage record).",
    unset: "required with `summarize`",
  }),
  keepSystem: z.boolean().default(true).meta({ description: "Never drop system messages when truncating." }),
  keepLastTurns: z.number().int().min(1).max(10_000).default(2).meta({ description: "The last N turns (a user message and what answers it) are never dropped; a request that does not fit with them is refused." }),
  reserveOutputTokens: z.number().int().min(0).max(10_000_000).default(1_024).meta({ description: "Output tokens kept free in the window when the request sets no `max_tokens`." }),
});
