import { getHeapStatistics } from "node:v8";
import { afterEach, describe, expect, it, vi } from "vitest";
import { governHeapGrowth, HEAP_GROWTH_ALLOWANCE_BYTES, heapGrowingPercent, oldGenerationBytes } from "../src/server/heap-growth.js";

const MiB = 1024 * 1024;

describe("heap growth", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("keeps V8's own factor for heaps up to the allowance, then shrinks the headroom to the allowance", () => {
    expect(heapGrowingPercent(0)).toBe(0);
    expect(heapGrowingPercent(HEAP_GROWTH_ALLOWANCE_BYTES)).toBe(0);
    expect(heapGrowingPercent(HEAP_GROWTH_ALLOWANCE_BYTES + 1)).toBe(95);
    expect(heapGrowingPercent(256 * MiB)).toBe(50);
    expect(heapGrowingPercent(450 * MiB)).toBe(25);
    // Never under 10 %: full collections must not chase each other.
    expect(heapGrowingPercent(4096 * MiB)).toBe(10);
  });

  it("reads the old generation from V8: more than nothing, less than the whole heap", () => {
    const bytes = oldGenerationBytes();
    expect(bytes).toBeGreaterThan(0);
    expect(bytes).toBeLessThanOrEqual(getHeapStatistics().used_heap_size);
  });

  it("sets the flag once a second when the heap's size calls for another percentage, and only then", () => {
    vi.useFakeTimers();
    let size = 64 * MiB;
    const flags: string[] = [];
    const stop = governHeapGrowth({ execArgv: [], read: () => size, setFlag: (flag) => flags.push(flag) });
    vi.advanceTimersByTime(1_000);
    expect(flags).toEqual([]);
    size = 450 * MiB;
    vi.advanceTimersByTime(999);
    expect(flags).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(flags).toEqual(["--heap-growing-percent=25"]);
    vi.advanceTimersByTime(5_000);
    expect(flags).toHaveLength(1);
    size = 32 * MiB;
    vi.advanceTimersByTime(1_000);
    expect(flags.at(-1)).toBe("--heap-growing-percent=0");
    stop();
    size = 900 * MiB;
    vi.advanceTimersByTime(10_000);
    expect(flags).toHaveLength(2);
  });

  it("leaves alone an operator's own --heap-growing-percent", () => {
    vi.useFakeTimers();
    const flags: string[] = [];
    for (const arg of ["--heap-growing-percent=0", "--heap_growing_percent=50"]) {
      governHeapGrowth({ execArgv: ["--max-semi-space-size=64", arg], read: () => 900 * MiB, setFlag: (flag) => flags.push(flag) });
    }
    vi.advanceTimersByTime(5_000);
    expect(flags).toEqual([]);
  });
});
