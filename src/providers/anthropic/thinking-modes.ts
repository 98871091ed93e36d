import type { AnthropicThinking } from "../../config/schema.js";
import type { ReasoningEffort } from "../../core/chat-request.js";
import { MIN_THINKING_BUDGET_TOKENS } from "../../core/chat-request.js";

/**
 * How each Claude family takes a reasoning effort, by model-name prefix
 * (the longest matching prefix wins, so dated ids such as
 * `claude-haiku-4-5-20251001` match their family).
 *
 * Anthropic's docs (extended and adaptive thinking): adaptive thinking
 * (`thinking: {type: "adaptive"}` with `output_config.effort`) exists from
 * Claude Opus 4.6 and Sonnet 4.6 on, and Claude 4.7 and later accept nothing
 * else; Claude 4.5 and earlier (Haiku 4.5, Sonnet 4/4.5, Opus 4/4.1/4.5,
 * Sonnet 3.7) know only `thinking: {type: "enabled", budget_tokens}` and
 * refuse adaptive with a 400. A model this table does not name gets the
 * budget form, which every thinking model before 4.7 accepts; a newer model
 * is added here, or set per provider or target with `thinking: adaptive`.
 */
const MODES_BY_PREFIX: ReadonlyArray<readonly [prefix: string, mode: AnthropicThinking]> = [
  ["claude-3", "budget"],
  ["claude-haiku-4", "budget"],
  ["claude-sonnet-4", "budget"],
  ["claude-opus-4", "budget"],
  ["claude-sonnet-4-6", "adaptive"],
  ["claude-opus-4-6", "adaptive"],
  ["claude-opus-4-7", "adaptive"],
  ["claude-opus-4-8", "adaptive"],
  ["claude-opus-5", "adaptive"],
  ["claude-mythos", "adaptive"],
  ["claude-fable", "adaptive"],
];

/** The thinking form `model` accepts, from the table above; `budget` for a model it does not name. */
export function thinkingModeFor(model: string): AnthropicThinking {
  let best: readonly [string, AnthropicThinking] | undefined;
  for (const entry of MODES_BY_PREFIX) {
    if (model.startsWith(entry[0]) && (best === undefined || entry[0].length > best[0].length)) best = entry;
  }
  return best?.[1] ?? "budget";
}

/** Anthropic refuses a smaller `budget_tokens`. */

/**
 * `budget_tokens` for an effort on a budget-form model: the floor for the
 * two lowest (Anthropic suggests starting there), then a factor of four per
 * step. Within the caller's max_tokens, anthropic-request.ts cuts it.
 */
export const EFFORT_BUDGET_TOKENS: Readonly<Record<Exclude<ReasoningEffort, "none">, number>> = {
  minimal: MIN_THINKING_BUDGET_TOKENS,
  low: MIN_THINKING_BUDGET_TOKENS,
  medium: 4096,
  high: 16_384,
  xhigh: 32_768,
};
