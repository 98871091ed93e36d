import { describe, expect, it } from "vitest";
import { costMicros } from "../../src/usage/cost.js";

describe("hosted web searches are priced per search", () => {
  const price = { inputPerMTok: 5, outputPerMTok: 25, perWebSearch: 0.01 };

  it("adds perWebSearch for each search the usage counts, beside the tokens", () => {
    const tokens = { inputTokens: 1_000, outputTokens: 100, cachedInputTokens: 0, reasoningTokens: 0 };
    // 1,000 × $5/M + 100 × $25/M = $0.0075 = 7,500 micro-dollars; 3 searches at $0.01 = 30,000.
    expect(costMicros(tokens, price)).toBe(7_500);
    expect(costMicros({ ...tokens, webSearches: 3 }, price)).toBe(37_500);
  });

  it("charges nothing for searches on a price without perWebSearch", () => {
    expect(costMicros({ inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0, webSearches: 5 }, { inputPerMTok: 5, outputPerMTok: 25 })).toBe(0);
  });
});
