import type { Price, RouteTarget } from "../config/config.js";
import type { Usage } from "../core/delta.js";

/**
 * Money is integer micro-dollars (1e-6 USD) from here on, never a float.
 * A configured price (USD per million tokens, a decimal) becomes integer
 * micro-dollars per million tokens once; a cost is then
 * Σ tokens × price ÷ 1e6, computed in BigInt and rounded up: a request is
 * never charged less than it cost. Before that division the sum is exact in
 * pico-dollars (1e-12 USD: micro-dollars per million tokens × tokens), which
 * the ledger keeps beside the rounded figure (costPicos).
 */
interface IntegerPrice {
  readonly input: bigint;
  readonly cachedInput: bigint;
  readonly cacheWrite5m: bigint;
  readonly cacheWrite1h: bigint;
  readonly output: bigint;
  readonly reasoning: bigint;
  /** Micro-dollars per hosted web search (a price per call, not per million). */
  readonly webSearch: bigint;
  /** Micro-dollars per upstream request that answered. */
  readonly request: bigint;
}

const MICROS = 1_000_000;
const MICROS_N = 1_000_000n;

const cache = new WeakMap<Price, IntegerPrice>();

function integerPrice(price: Price): IntegerPrice {
  let p = cache.get(price);
  if (!p) {
    const micros = (usd: number): bigint => BigInt(Math.round(usd * MICROS));
    const input = micros(price.inputPerMTok);
    const output = micros(price.outputPerMTok);
    p = {
      input,
      cachedInput: micros(price.cachedInputPerMTok ?? price.inputPerMTok),
      cacheWrite5m: micros(price.cacheWrite5mPerMTok ?? price.inputPerMTok),
      cacheWrite1h: micros(price.cacheWrite1hPerMTok ?? price.inputPerMTok),
      output,
      reasoning: price.reasoningPerMTok === undefined ? output : micros(price.reasoningPerMTok),
      webSearch: micros(price.perWebSearch ?? 0),
      request: micros(price.perRequest ?? 0),
    };
    cache.set(price, p);
  }
  return p;
}

/**
 * What `usage` cost at `price`, exactly, in pico-dollars (0n for an
 * unpriced target). Cache reads and writes are part of input and priced
 * at their own rates; what is left of input is fresh. Counts that add up
 * to more than the input (a provider's inconsistency) are capped in that
 * order (reads, 1h writes, 5m writes), never charged twice. Reasoning is
 * part of output and priced at its own rate (the output rate unless set),
 * capped at the output. Hosted web searches are priced per search
 * (`price.perWebSearch`), and each upstream request that answered (used
 * any tokens) at `price.perRequest`.
 */
export function costPicos(usage: Usage, price: Price | undefined): bigint {
  if (!price) return 0n;
  const p = integerPrice(price);
  let left = BigInt(usage.inputTokens);
  const take = (n: number | undefined): bigint => {
    const wanted = BigInt(Math.max(0, n ?? 0));
    const part = wanted < left ? wanted : left;
    left -= part;
    return part;
  };
  const cached = take(usage.cachedInputTokens);
  const written1h = take(usage.cacheWrite1hTokens);
  const written5m = take(usage.cacheWrite5mTokens);
  const output = BigInt(Math.max(0, usage.outputTokens));
  const reasoning = BigInt(Math.max(0, usage.reasoningTokens ?? 0)) < output ? BigInt(Math.max(0, usage.reasoningTokens ?? 0)) : output;
  const searches = BigInt(Math.max(0, usage.webSearches ?? 0)) * p.webSearch * MICROS_N;
  const requests = BigInt(billedRequests(usage)) * p.request * MICROS_N;
  return left * p.input + cached * p.cachedInput + written5m * p.cacheWrite5m + written1h * p.cacheWrite1h + (output - reasoning) * p.output + reasoning * p.reasoning + searches + requests;
}

/**
 * The upstream requests `usage` pays a per-request fee for: those it
 * covers (a gateway tool loop's rounds; one otherwise) when any token was
 * used, none for a call that never reached an answer.
 */
export function billedRequests(usage: Usage): number {
  return usage.inputTokens > 0 || usage.outputTokens > 0 ? Math.max(1, usage.requests ?? 1) : 0;
}

/** What `usage` cost at `price`, in micro-dollars rounded up (0 for an unpriced target): what budgets count. */
export function costMicros(usage: Usage, price: Price | undefined): number {
  return microsOf(costPicos(usage, price));
}

/** Pico-dollars as micro-dollars, rounded up. */
export function microsOf(picos: bigint): number {
  return Number((picos + MICROS_N - 1n) / MICROS_N);
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
