import { describe, expect, it } from "vitest";
import { boundedCount, hasLongRun } from "../../src/usage/token-count.js";

describe("counting tokens in bounded time", () => {
  it("finds a run longer than 100 characters of spaces or of anything else, and nothing shorter", () => {
    expect(hasLongRun(`${"a".repeat(100)} ${"b".repeat(100)}`)).toBe(false);
    expect(hasLongRun(`x ${"a".repeat(101)} y`)).toBe(true);
    expect(hasLongRun(`x${" ".repeat(101)}y`)).toBe(true);
    expect(hasLongRun(`x${"\n\t".repeat(51)}y`)).toBe(true);
    // Ideographic spaces are not taken for spaces: their run, and the words around it, make one long run.
    expect(hasLongRun(`${"\u3000".repeat(101)}`)).toBe(true);
    expect(hasLongRun("数据处理 ".repeat(1_000))).toBe(false);
  });

  it("counts text without such a run in one call, and text with one in pieces", () => {
    const calls: number[] = [];
    const piece = (t: string) => (calls.push(t.length), t.length);
    expect(boundedCount("word ".repeat(10_000), piece)).toBe(50_000);
    expect(calls).toEqual([50_000]);
    calls.length = 0;
    expect(boundedCount(`${"word ".repeat(1_000)}${"z".repeat(250)}`, piece)).toBe(5_250);
    expect(calls.length).toBeGreaterThan(1);
    expect(Math.max(...calls)).toBeLessThanOrEqual(4_096);
  });
});
