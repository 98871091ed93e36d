import { describe, expect, it } from "vitest";
import { backoffDelay } from "../../src/core/backoff.js";

describe("backoffDelay", () => {
  it("doubles from the base per attempt", () => {
    expect([0, 1, 2, 3].map((n) => backoffDelay(n, { baseMs: 250 }))).toEqual([250, 500, 1_000, 2_000]);
  });

  it("stops at the ceiling", () => {
    expect([4, 5, 6, 100].map((n) => backoffDelay(n, { baseMs: 1_000, maxMs: 30_000 }))).toEqual([16_000, 30_000, 30_000, 30_000]);
  });

  it("treats a negative attempt as the first", () => {
    expect(backoffDelay(-1, { baseMs: 100, maxMs: 2_000 })).toBe(100);
  });

  it("stays a number however many attempts failed", () => {
    expect(backoffDelay(10_000, { baseMs: 0, maxMs: 500 })).toBe(0);
    expect(backoffDelay(10_000, { baseMs: 25, maxMs: 500 })).toBe(500);
  });

  it("with full jitter, draws a whole delay below the ceiling", () => {
    const options = { baseMs: 100, maxMs: 2_000, jitter: "full", random: () => 0.999 } as const;
    expect(backoffDelay(0, options)).toBe(99);
    expect(backoffDelay(2, { ...options, random: () => 0.5 })).toBe(200);
    expect(backoffDelay(9, options)).toBe(1_998);
    expect(backoffDelay(3, { ...options, random: () => 0 })).toBe(0);
  });
});
