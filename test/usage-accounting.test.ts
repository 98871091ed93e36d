import { describe, expect, it } from "vitest";
import { resolveConfig } from "../src/config/config.js";
import { resetDuration, usdFromMicros } from "../src/tenancy/quota-headers.js";
import { costMicros, maxCostMicros } from "../src/usage/cost.js";
import { periodOf } from "../src/usage/periods.js";
import { estimatedInputTokens } from "../src/usage/prompt-size.js";
import { boundedCount, tokenCounter } from "../src/usage/token-count.js";
import { createUsageMeter, MAX_KEPT_CHARS } from "../src/usage/usage-meter.js";
import type { ChatRequest } from "../src/core/chat-request.js";

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
        { role: "user", content: [{ type: "text", text: "x".repeat(40) }, { type: "image_url", url: "data:image/png;base64,AAAA" }] },
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
