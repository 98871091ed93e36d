import { describe, expect, it } from "vitest";
import { resolveConfig } from "../src/config/config.js";
import type { ChatRequest } from "../src/core/chat-request.js";
import { resetDuration, usdFromMicros } from "../src/tenancy/quota-headers.js";
import { costMicros, costPicos, maxCostMicros } from "../src/usage/cost.js";
import { periodOf } from "../src/usage/periods.js";
import { estimatedInputTokens } from "../src/usage/prompt-size.js";
import { boundedCount, tokenCounter } from "../src/usage/token-count.js";
import { createUsageMeter, MAX_KEPT_CHARS } from "../src/usage/usage-meter.js";

const usage = (inputTokens: number, outputTokens: number, cachedInputTokens = 0) => ({ inputTokens, outputTokens, cachedInputTokens, reasoningTokens: 0 });

describe("costs in integer micro-dollars", () => {
  it("prices per million tokens become exact integers, rounded up per request", () => {
    // 1,234 × 0.15 + 56 × 0.6 = 185.1 + 33.6 = 218.7 micro-dollars → 219
    expect(costMicros(usage(1_234, 56), { inputPerMTok: 0.15, outputPerMTok: 0.6 })).toBe(219);
    // cached input at its own price: 1,000 fresh × 2.5 + 1,000 cached × 1.25 + 10 × 10
    expect(costMicros(usage(2_000, 10, 1_000), { inputPerMTok: 2.5, outputPerMTok: 10, cachedInputPerMTok: 1.25 })).toBe(2_500 + 1_250 + 100);
    // without a cached price, cached input costs as input
    expect(costMicros(usage(2_000, 0, 1_000), { inputPerMTok: 3, outputPerMTok: 15 })).toBe(6_000);
    expect(costMicros(usage(5, 5), undefined)).toBe(0);
    // Far beyond 2^53 in intermediate products, still exact.
    expect(costMicros(usage(10_000_000, 10_000_000), { inputPerMTok: 1_000_000, outputPerMTok: 1_000_000 })).toBe(20_000_000_000_000);
  });

  it("Anthropic cache writes are priced at their own rates: 6 fresh + 159,217 written (5m) + 2,745 output at $5 / $6.25 / $25 is exactly $1.06376125", () => {
    const config = resolveConfig(
      {
        providers: { a: { kind: "anthropic", baseUrl: "http://127.0.0.1:9" }, o: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
        models: {
          // The write rates unset: Anthropic's 1.25x and 2x of input.
          claude: { provider: "a", model: "claude-opus-4-5", price: { inputPerMTok: 5, outputPerMTok: 25 } },
          written: { provider: "a", model: "claude-opus-4-5", price: { inputPerMTok: 5, outputPerMTok: 25, cacheWrite5mPerMTok: 7, cacheWrite1hPerMTok: 9 } },
          gpt: { provider: "o", model: "gpt", price: { inputPerMTok: 5, outputPerMTok: 25 } },
        },
      },
      {},
    );
    const price = config.models.get("claude")!.targets[0]!.price!;
    expect(price).toEqual({ inputPerMTok: 5, outputPerMTok: 25, cacheWrite5mPerMTok: 6.25, cacheWrite1hPerMTok: 10 });
    const call = { inputTokens: 6 + 159_217, outputTokens: 2_745, cachedInputTokens: 0, reasoningTokens: 0, cacheWrite5mTokens: 159_217 };
    // 6 × 5 + 159,217 × 6.25 + 2,745 × 25 = 1,063,761.25 micro-dollars: exact in pico-dollars, rounded up in micro-dollars.
    expect(costPicos(call, price)).toBe(1_063_761_250_000n);
    expect(Number(costPicos(call, price)) / 1e12).toBe(1.06376125);
    expect(costMicros(call, price)).toBe(1_063_762);
    // The same tokens written for an hour: 2x input.
    const hour = { ...call, cacheWrite5mTokens: 0, cacheWrite1hTokens: 159_217 };
    expect(costPicos(hour, price)).toBe((6n * 5n + 159_217n * 10n + 2_745n * 25n) * 1_000_000n);
    // Both lifetimes and reads in one call: each at its rate, the rest fresh.
    const mixed = { inputTokens: 1_000, outputTokens: 0, cachedInputTokens: 100, reasoningTokens: 0, cacheWrite5mTokens: 200, cacheWrite1hTokens: 300 };
    expect(costPicos(mixed, price)).toBe((400n * 5_000_000n + 100n * 5_000_000n + 200n * 6_250_000n + 300n * 10_000_000n) * 1n);
    // Configured rates win over the defaults.
    expect(costPicos(call, config.models.get("written")!.targets[0]!.price)).toBe((6n * 5n + 159_217n * 7n + 2_745n * 25n) * 1_000_000n);
    // On other providers an unset write rate is the input price (they report no writes).
    expect(config.models.get("gpt")!.targets[0]!.price).toEqual({ inputPerMTok: 5, outputPerMTok: 25 });
    expect(costPicos(call, config.models.get("gpt")!.targets[0]!.price)).toBe(((6n + 159_217n) * 5n + 2_745n * 25n) * 1_000_000n);
    // Counts past the input (an inconsistent report) are never charged twice.
    expect(costPicos({ inputTokens: 10, outputTokens: 0, cachedInputTokens: 8, reasoningTokens: 0, cacheWrite5mTokens: 8 }, price)).toBe(8n * 5_000_000n + 2n * 6_250_000n);
  });

  it("a reservation takes the dearest target of the alias", () => {
    const config = resolveConfig(
      {
        providers: { p: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
        models: {
          m: {
            targets: [
              { provider: "p", model: "cheap", price: { inputPerMTok: 1, outputPerMTok: 2 } },
              { provider: "p", model: "dear", price: { inputPerMTok: 5, outputPerMTok: 20 } },
              { provider: "p", model: "free" },
            ],
          },
        },
      },
      {},
    );
    expect(maxCostMicros(100, 1_000, config.models.get("m")!.targets)).toBe(500 + 20_000);
  });

  it("dollars and durations are written without floats creeping in", () => {
    expect(usdFromMicros(25_000_000)).toBe("25");
    expect(usdFromMicros(1_234_567)).toBe("1.234567");
    expect(usdFromMicros(50_000)).toBe("0.05");
    expect(resetDuration(17.2)).toBe("18ms");
    expect(resetDuration(1_500)).toBe("1.5s");
    expect(resetDuration(360_000)).toBe("6m0s");
  });

  it("a budget's reset hours or days away is written with hours and days, never thousands of minutes", () => {
    expect(resetDuration(64_412_000)).toBe("17h53m32s"); // was 1073m32s
    expect(resetDuration(3_600_000)).toBe("1h0m0s");
    expect(resetDuration(604_800_000 - 3_600_000)).toBe("6d23h0m0s");
    expect(resetDuration(30 * 86_400_000 + 1)).toBe("30d0h0m1s"); // rounded up: never before the renewal
    expect(resetDuration(3_599_001)).toBe("1h0m0s");
  });
});

describe("token counts the gateway makes itself", () => {
  it("counts ordinary text exactly as one tokenizer call would, and hostile runs in linear time", async () => {
    const count = await tokenCounter();
    const { countTokens } = await import("gpt-tokenizer");
    const prose = "Tokens are counted the same way in bounded pieces. ".repeat(400);
    expect(count(prose)).toBe(countTokens(prose));
    // 1 MiB of one character would take minutes as one piece; bounded, it is counted in pieces of 100.
    const pieces: string[] = [];
    expect(boundedCount("a".repeat(250), (t) => (pieces.push(t), t.length))).toBe(250);
    expect(pieces.map((p) => p.length).filter((n) => n > 0)).toEqual([100, 100, 50]);
    expect(count("<|endoftext|> is text here")).toBeGreaterThan(0);
  });

  it("reserves characters ÷ 4 plus framing and a flat cost per image at admission", () => {
    const request = {
      model: "m",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "x".repeat(40) },
            { type: "image_url", url: "data:image/png;base64,AAAA" },
          ],
        },
        { role: "assistant", content: [{ type: "text", text: "" }], toolCalls: [{ id: "1", name: "abcd", arguments: "{}" }] },
      ],
      tools: [],
      sampling: { stop: [] },
      metadata: { labels: {} },
    } as unknown as ChatRequest;
    expect(estimatedInputTokens(request)).toBe(Math.ceil(46 / 4) + 2 * 4 + 3 + 1_000);
  });

  it("keeps a bounded part of a long answer and extrapolates the rest", async () => {
    const meter = createUsageMeter({ model: "m", messages: [], tools: [], sampling: { stop: [] }, metadata: { labels: {} } } as unknown as ChatRequest);
    const word = "lorem ";
    for (let chars = 0; chars < MAX_KEPT_CHARS * 4; chars += word.length) meter.observe({ type: "text", text: word });
    const final = await meter.final();
    expect(final.estimated).toBe(true);
    const exact = (await tokenCounter())(word.repeat(Math.ceil((MAX_KEPT_CHARS * 4) / word.length)));
    expect(Math.abs(final.outputTokens - exact) / exact).toBeLessThan(0.01);
  });
});

describe("calendar periods", () => {
  it("weeks start on Monday 00:00 UTC, months on the 1st", () => {
    const sunday = Date.UTC(2026, 4, 17, 23, 59);
    expect(periodOf("week", sunday)).toMatchObject({ id: "w2026-05-11", startMs: Date.UTC(2026, 4, 11), endMs: Date.UTC(2026, 4, 18) });
    expect(periodOf("month", Date.UTC(2024, 1, 29))).toMatchObject({ id: "m2024-02", endMs: Date.UTC(2024, 2, 1) });
    expect(periodOf("day", Date.UTC(2026, 0, 1, 0, 0, 0, 1)).id).toBe("d2026-01-01");
  });
});
