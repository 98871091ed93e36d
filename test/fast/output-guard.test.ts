import { describe, expect, it } from "vitest";
import type { RouteTarget } from "../../src/config/config.js";
import type { ChatRequest } from "../../src/core/chat-request.js";
import type { ContentDelta } from "../../src/core/delta.js";
import { CAP_CHARS_PER_TOKEN, CAP_MARGIN_CHARS, createOutputGuard, outputLimits } from "../../src/pipeline/output-guard.js";
import { simulatedTokens } from "../../src/simulator/text.js";
import { outputTokensWithin } from "../../src/usage/cost.js";
import { tokenCounter } from "../../src/usage/token-count.js";

const text = (t: string): ContentDelta => ({ type: "text", text: t });
const request = (maxTokens?: number) => ({ model: "m", messages: [], tools: [], sampling: { stop: [], ...(maxTokens === undefined ? {} : { maxTokens }) }, metadata: { labels: {} } }) as unknown as ChatRequest;
const target = (extra: Partial<RouteTarget> = {}) => ({ key: "p/m", model: "m", price: { inputPerMTok: 1, outputPerMTok: 1_000 }, ...extra }) as unknown as RouteTarget;

/** Feeds `pieces` until the guard cuts; what was delivered and the cut. */
function run(guard: ReturnType<typeof createOutputGuard>, pieces: readonly string[]) {
  let delivered = "";
  for (const piece of pieces) {
    const cut = guard?.tap(text(piece));
    if (cut) return { delivered, cut };
    delivered += piece;
  }
  return { delivered, cut: undefined };
}

describe("the output guard", () => {
  it("costs nothing where nothing bounds the answer: no cap, no budget, no guard", () => {
    expect(createOutputGuard(outputLimits(request(), target()))).toBeUndefined();
    expect(createOutputGuard(outputLimits(request(), target({ price: undefined }), { micros: 1_000, inputTokens: 10 }))).toBeUndefined();
  });

  it("never cuts an answer that keeps to its cap: prose, code, tables, CJK, JSON", async () => {
    const count = await tokenCounter();
    const samples = [
      simulatedTokens(1, 400).join(""),
      "    ".repeat(50) + "return value;\n".repeat(40),
      "| name | value |\n|--------|--------|\n".repeat(40),
      "        if (x) {\n            y();\n        }\n".repeat(30),
      "日本語のテキストです。".repeat(60),
      JSON.stringify({ rows: Array.from({ length: 80 }, (_, i) => ({ id: i, name: `item-${i}` })) }),
    ];
    for (const sample of samples) {
      const tokens = count(sample);
      const { cut } = run(
        createOutputGuard(outputLimits(request(tokens), target())),
        [...sample.matchAll(/.{1,7}/gsu)].map((m) => m[0]),
      );
      expect(cut, sample.slice(0, 40)).toBeUndefined();
    }
  });

  it("cuts past max_tokens within its bound, the crossing delta undelivered; the target's maxOutputTokens caps a request without one", () => {
    const pieces = simulatedTokens(2, 10_000);
    const { delivered, cut } = run(createOutputGuard(outputLimits(request(50), target())), pieces);
    expect(cut).toMatchObject({ reason: "max_tokens", limitTokens: 50, deliveredChars: delivered.length });
    expect(delivered.length).toBeLessThanOrEqual(50 * CAP_CHARS_PER_TOKEN + CAP_MARGIN_CHARS);
    expect(delivered.length).toBeGreaterThan(50 * CAP_CHARS_PER_TOKEN + CAP_MARGIN_CHARS - 20);
    // Within a small multiple of the cap: 16 characters a token of English words is about 4 tokens each.
    expect(run(createOutputGuard(outputLimits(request(), target({ capabilities: { maxOutputTokens: 10 } }))), pieces).cut).toMatchObject({ reason: "max_tokens", limitTokens: 10 });
    expect(run(createOutputGuard(outputLimits(request(500), target({ capabilities: { maxOutputTokens: 10 } }))), pieces).cut).toMatchObject({ limitTokens: 10 });
  });

  it("cuts where the running cost passes the allowance, tool-call arguments and reasoning counted", () => {
    // 1,000 micro-dollars a token: 100,000 micro-dollars less 1,000 tokens of prompt at 1 each buy 99 tokens.
    expect(outputTokensWithin(100_000, 1_000, { inputPerMTok: 1, outputPerMTok: 1_000 })).toBe(99);
    expect(outputTokensWithin(100, 1_000_000, { inputPerMTok: 1, outputPerMTok: 1_000 })).toBe(0);
    const guard = createOutputGuard(outputLimits(request(), target(), { micros: 100_000, inputTokens: 1_000 }))!;
    expect(guard.tap({ type: "reasoning", text: "x".repeat(200) })).toBeUndefined();
    expect(guard.tap({ type: "tool_call", index: 0, id: "c", name: "f", arguments: "y".repeat(190) })).toBeUndefined();
    expect(guard.tap(text("z".repeat(10)))).toMatchObject({ reason: "budget", limitTokens: 99, deliveredChars: 391 });
  });
});
