import type { Price, RouteTarget } from "../config/config.js";
import type { Usage } from "../core/delta.js";

/**
 * Money is integer micro-dollars (1e-6 USD) from here on, never a float.
 * A configured price (USD per million tokens, a decimal) becomes integer
 * micro-dollars per million tokens once; a cost is then
 * Σ tokens × price ÷ 1e6, computed in BigInt and rounded up: a request is
 * never charged less than it cost.
 */
interface IntegerPrice {
  readonly input: bigint;
  readonly cachedInput: bigint;
  readonly output: bigint;
  /** Micro-dollars per hosted web search (a price per call, not per million). */
  readonly webSearch: bigint;
}

const MICROS = 1_000_000;
const MICROS_N = 1_000_000n;

const cache = new WeakMap<Price, IntegerPrice>();

function integerPrice(price: Price): IntegerPrice {
  let p = cache.get(price);
  if (!p) {
    const input = BigInt(Math.round(price.inputPerMTok * MICROS));
    p = {
      input,
      cachedInput: price.cachedInputPerMTok === undefined ? input : BigInt(Math.round(price.cachedInputPerMTok * MICROS)),
      output: BigInt(Math.round(price.outputPerMTok * MICROS)),
      webSearch: BigInt(Math.round((price.perWebSearch ?? 0) * MICROS)),
    };
    cache.set(price, p);
  }
  return p;
}

/** What `usage` cost at `price`, in micro-dollars (0 for an unpriced target). Cached input is part of input; hosted web searches are priced per search. */
export function costMicros(usage: Usage, price: Price | undefined): number {
  if (!price) return 0;
  const p = integerPrice(price);
  const cached = BigInt(Math.min(usage.cachedInputTokens, usage.inputTokens));
  const fresh = BigInt(usage.inputTokens) - cached;
  const scaled = fresh * p.input + cached * p.cachedInput + BigInt(usage.outputTokens) * p.output;
  return Number((scaled + MICROS_N - 1n) / MICROS_N) + Number(BigInt(usage.webSearches ?? 0) * p.webSearch);
}

/**
 * The most a request can cost on any of its targets (it may fail over to
 * the dearest): what a budget reserves at admission.
 */
export function maxCostMicros(inputTokens: number, outputTokens: number, targets: readonly RouteTarget[]): number {
  const usage = { inputTokens, outputTokens, cachedInputTokens: 0, reasoningTokens: 0 };
  let max = 0;
  for (const target of targets) max = Math.max(max, costMicros(usage, target.price));
  return max;
}

/**
 * The most output tokens `micros` pays for at `price` after `inputTokens`
 * of prompt (none when the prompt alone costs more); unbounded for a
 * target whose output is free.
 */
export function outputTokensWithin(micros: number, inputTokens: number, price: Price): number {
  const p = integerPrice(price);
  if (p.output === 0n) return Number.POSITIVE_INFINITY;
  const left = BigInt(Math.max(0, Math.floor(micros))) * MICROS_N - BigInt(inputTokens) * p.input;
  return left <= 0n ? 0 : Number(left / p.output);
}
