import type { RouteTarget } from "../config/config.js";
import type { ChatRequest } from "../core/chat-request.js";
import type { ContentDelta } from "../core/delta.js";
import { outputTokensWithin } from "../usage/cost.js";

/** Why the gateway ended an answer itself: it passed its token cap, or what its key's budget can pay. */
export type CutReason = "max_tokens" | "budget";

/** The guard's verdict on a delta that would take the answer past its limit. */
export interface OutputCut {
  readonly reason: CutReason;
  /** The limit passed, in output tokens. */
  readonly limitTokens: number;
  /** Characters of output delivered before the cut (the delta that crossed the limit is not delivered). */
  readonly deliveredChars: number;
}

/**
 * One stream's output, counted as it passes, against what the request
 * reserved (docs/tenancy.md, "Enforcing what was reserved"). Shaped as a
 * pipeline stage: a per-delta tap, nothing at the end.
 */
export interface OutputGuard {
  /** The cut, when `delta` would take the answer past a limit; undefined (the common case) otherwise. */
  tap(delta: ContentDelta): OutputCut | undefined;
}

/** What one answer may hold: its token cap and what its key's budget can still pay, when there is either. */
export interface OutputLimits {
  /** The request's max_tokens, or the serving target's maxOutputTokens when smaller or the request sets none. */
  readonly maxTokens?: number;
  /** Output tokens the key's allowance (its reservation plus the rest of its budget) pays for, the prompt paid first. */
  readonly budgetTokens?: number;
}

/**
 * Counting tokens per delta would put a tokenizer on the hottest path, so
 * the guard counts characters (a string's length: no scan, one add and one
 * compare per delta) and converts:
 * - the cap is enforced with a bound honest answers do not reach: English
 *   averages about 4 characters a token, code and JSON fewer, CJK about 1;
 *   indented code about 6. So an answer is cut only past 16 characters per
 *   token of its cap, plus a margin for short caps. An upstream that
 *   honours max_tokens is not cut; one that ignores it is cut within a
 *   small multiple of its cap instead of never. The exception: text made
 *   mostly of long runs of one character (o200k packs 50 `=` or 100 spaces
 *   into one token) can pass the bound before its cap.
 * - the budget is enforced at the usual rate (4 characters a token): the
 *   running cost is an estimate, and text of short tokens (CJK) can cost
 *   up to a few times it before the cut. What was delivered is then
 *   counted with the tokenizer (usage/usage-meter.ts) and charged.
 */
export const CAP_CHARS_PER_TOKEN = 16;
export const CAP_MARGIN_CHARS = 1_024;
export const BUDGET_CHARS_PER_TOKEN = 4;

/** The limits of one answer from its request, its serving target and its key's allowance (none without a budget). */
export function outputLimits(request: ChatRequest, target: RouteTarget, allowance?: { readonly micros: number; readonly inputTokens: number }): OutputLimits {
  const caps = [request.sampling.maxTokens, target.capabilities?.maxOutputTokens].filter((n): n is number => n !== undefined);
  const budgetTokens = allowance && target.price ? outputTokensWithin(allowance.micros, allowance.inputTokens, target.price) : undefined;
  return {
    ...(caps.length > 0 ? { maxTokens: Math.min(...caps) } : {}),
    ...(budgetTokens === undefined || !Number.isFinite(budgetTokens) ? {} : { budgetTokens }),
  };
}

/** A guard for `limits`, or undefined when there is nothing to enforce (no cap, no budget): such streams pay nothing per delta. */
export function createOutputGuard(limits: OutputLimits): OutputGuard | undefined {
  const capChars = limits.maxTokens === undefined ? Number.POSITIVE_INFINITY : limits.maxTokens * CAP_CHARS_PER_TOKEN + CAP_MARGIN_CHARS;
  const budgetChars = limits.budgetTokens === undefined ? Number.POSITIVE_INFINITY : limits.budgetTokens * BUDGET_CHARS_PER_TOKEN;
  const bound = Math.min(capChars, budgetChars);
  if (bound === Number.POSITIVE_INFINITY) return undefined;
  let chars = 0;
  return {
    tap(delta) {
      switch (delta.type) {
        case "text":
        case "reasoning":
          chars += delta.text.length;
          break;
        case "tool_call":
          chars += delta.arguments.length + (delta.name?.length ?? 0);
          break;
        default:
          return undefined;
      }
      if (chars <= bound) return undefined;
      const delivered = chars - (delta.type === "tool_call" ? delta.arguments.length + (delta.name?.length ?? 0) : delta.text.length);
      return capChars <= budgetChars ? { reason: "max_tokens", limitTokens: limits.maxTokens!, deliveredChars: delivered } : { reason: "budget", limitTokens: limits.budgetTokens!, deliveredChars: delivered };
    },
  };
}
