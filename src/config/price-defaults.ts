import type { ProviderKind } from "../core/chat-request.js";

/** Anthropic's cache-write multipliers of the input price: five-minute and one-hour writes. */
const ANTHROPIC_WRITE_5M = 1.25;
const ANTHROPIC_WRITE_1H = 2;

/** The price fields this reads and sets (config.ts's Price; not imported, which would make a cycle). */
interface WritePrices {
  readonly inputPerMTok: number;
  readonly cacheWrite5mPerMTok?: number;
  readonly cacheWrite1hPerMTok?: number;
}

/**
 * A target's price with the cache-write rates its provider bills when the
 * config leaves them unset: Anthropic charges 1.25× input for five-minute
 * writes and 2× for one-hour writes, and a gateway that priced them as
 * input under-charged every cached conversation. Other providers report no
 * writes, so their unset rates stay the input price (usage/cost.ts).
 */
export function withCacheWriteDefaults<P extends WritePrices>(price: P, kind: ProviderKind): P {
  if (kind !== "anthropic") return price;
  return {
    ...price,
    cacheWrite5mPerMTok: price.cacheWrite5mPerMTok ?? price.inputPerMTok * ANTHROPIC_WRITE_5M,
    cacheWrite1hPerMTok: price.cacheWrite1hPerMTok ?? price.inputPerMTok * ANTHROPIC_WRITE_1H,
  };
}
