import { z } from "zod";

const perMTok = () => z.number().min(0).max(1_000_000);

/**
 * USD per million tokens (and per search, per request); feeds the `cost`
 * strategy and budgets. Every field is priced against a count the usage
 * record and the ledger row carry, so a price set here is a price charged.
 */
export const priceSchema = z
  .strictObject({
    inputPerMTok: perMTok().meta({ description: "Fresh input." }),
    outputPerMTok: perMTok().meta({ description: "Output (reasoning included, unless `reasoningPerMTok` prices it apart)." }),
    cachedInputPerMTok: perMTok().optional().meta({ description: "Cached input (read from the provider's prompt cache).", unset: "the input price" }),
    cacheWrite5mPerMTok: perMTok()
      .optional()
      .meta({ description: "Input written to the provider's prompt cache for five minutes (reported by Anthropic targets).", unset: "1.25 × the input price on `anthropic` targets, the input price elsewhere" }),
    cacheWrite1hPerMTok: perMTok()
      .optional()
      .meta({ description: "Input written to the provider's prompt cache for an hour (reported by Anthropic targets).", unset: "2 × the input price on `anthropic` targets, the input price elsewhere" }),
    reasoningPerMTok: perMTok().optional().meta({ description: "Reasoning (thinking) tokens, part of output: for a provider that bills them apart from the answer.", unset: "the output price" }),
    perRequest: z
      .number()
      .min(0)
      .max(1_000)
      .optional()
      .meta({ description: "USD per upstream request that answered (a fee some providers add to tokens); a gateway tool loop's rounds count one each.", unset: "requests cost nothing beyond their tokens" }),
    perWebSearch: z
      .number()
      .min(0)
      .max(1_000)
      .optional()
      .meta({ description: "USD per search a hosted web search tool ran (`web_search` on a Responses upstream, Anthropic's web search), counted in the usage record.", unset: "searches cost nothing" }),
  })
  .meta({ group: "price", title: "Prices", description: "USD per million tokens, for the `cost` strategy and budgets (see [Budgets and spend](tenancy.md#budgets-and-spend) and [The model catalog](model-catalog.md))." });
