import { describe, expect, it } from "vitest";
import type { ProfileRun } from "../../bench/profile-load.js";
import { added, type PublicProfileResult, publicProfileGoals, sustainedConcurrency, sustains } from "../../bench/public-profile.js";

/** The public streaming profile's rules (bench/public-profile.ts), on made-up runs. */

const stats = (p50: number, p99: number) => ({ n: 100, p50, p99, max: p99 });
function run(concurrency: number, over: Partial<ProfileRun> = {}): ProfileRun {
  return { path: "direct", concurrency, streams: concurrency * 10, complete: concurrency * 10, errors: 0, ttftMs: stats(1, 2), gapMs: stats(0, 0.5), maxGapMs: 21, ...over };
}

describe("a sustained level", () => {
  it("needs every delta of every stream that did not fail, no gap over 40 ms and errors under 0.1 %", () => {
    expect(sustains(run(8))).toBe(true);
    expect(sustains(run(8, { maxGapMs: 40 }))).toBe(true);
    expect(sustains(run(8, { maxGapMs: 40.1 }))).toBe(false);
    expect(sustains(run(8, { complete: 79 }))).toBe(false);
    // 1 error in 2,000 streams is 0.05 %: sustained; 1 in 1,000 is 0.1 %: not.
    expect(sustains(run(200, { complete: 1999, errors: 1 }))).toBe(true);
    expect(sustains(run(100, { complete: 999, errors: 1 }))).toBe(false);
    expect(sustains(run(1, { streams: 0, complete: 0 }))).toBe(false);
  });

  it("is counted up the ladder from the lowest rung: the first failure ends the climb", () => {
    expect(sustainedConcurrency([run(1), run(8), run(32), run(128), run(512), run(1024)])).toBe(1024);
    expect(sustainedConcurrency([run(512, { maxGapMs: 60 }), run(1), run(8), run(32), run(128)])).toBe(128);
    expect(sustainedConcurrency([run(1), run(8, { maxGapMs: 41 }), run(32)])).toBe(1);
    expect(sustainedConcurrency([run(1, { complete: 9 }), run(8)])).toBe(0);
    expect(sustainedConcurrency([])).toBe(0);
  });
});

describe("added figures and goals", () => {
  it("subtracts direct's percentiles at the same concurrency", () => {
    expect(added(run(1, { ttftMs: stats(1.5, 3), gapMs: stats(0.1, 1.2) }), run(1))).toEqual({ ttftP50: 0.5, ttftP99: 1, gapP50: 0.1, gapP99: 0.7 });
  });

  it("holds SSE edges to the HTTP floor and the gRPC edge to the gRPC floor", () => {
    const at = (ttftP50: number, gapP99: number) => ({ 1: run(1, { ttftMs: stats(ttftP50, ttftP50 + 1), gapMs: stats(0, gapP99) }), 128: run(128, { gapMs: stats(0, gapP99) }) });
    const result = (grpcTtft: number): PublicProfileResult => ({
      levels: [1, 128],
      ladder: [1, 8, 32, 128, 512, 1024],
      runs: {
        direct: at(1, 0.5),
        "floor-sse": at(1.2, 0.6),
        "floor-grpc": at(2, 0.8),
        "sluice-chat": at(1.4, 1),
        "sluice-messages": at(1.4, 1),
        "sluice-responses": at(1.45, 1),
        "sluice-grpc": at(grpcTtft, 1),
      },
      sustained: { direct: 128, "floor-sse": 128, "floor-grpc": 128, "sluice-chat": 128, "sluice-messages": 128, "sluice-responses": 128, "sluice-grpc": 128 },
    });
    const met = (r: PublicProfileResult) => Object.fromEntries(publicProfileGoals(r).map((g) => [g.id, g.met]));
    // gRPC 0.25 ms over its own floor: met, though 1.05 ms over the HTTP floor.
    expect(met(result(2.25))).toEqual({ "public-ttft": true, "public-gap-1": true, "public-gap-128": true, "public-sustained": true, "public-grpc-ttft": true });
    expect(met(result(2.35))).toMatchObject({ "public-ttft": false, "public-grpc-ttft": false });
    const fewer = { ...result(2.25), sustained: { ...result(2.25).sustained, "sluice-messages": 32 } };
    expect(met(fewer)["public-sustained"]).toBe(false);
    const quick = { ...result(2.25), levels: [1] };
    expect(met(quick)["public-gap-128"]).toBe(false);
  });
});
