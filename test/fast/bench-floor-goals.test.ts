import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type GoalInput, goals } from "../../bench/goals.js";

/**
 * Goals 1–5 (bench/goals.ts) hold each edge to its own floor (issue #47):
 * the gRPC edge to the gRPC floor, the SSE facade to the HTTP floor. The
 * committed full run stands in for every other section; TTFT, CPU per
 * delta, capacity and cancellation are made up here so that the floor each
 * edge is held to decides the verdict.
 */

const base = JSON.parse(readFileSync(new URL("../../bench/results/latest.json", import.meta.url), "utf8")) as GoalInput;
const ttftAt = (p50: number) => ({ 1: { p50 }, 100: { p50: p50 * 10 }, 1000: { p50: p50 * 100 } });
const cap = (kibPerStream: number, gatewayCpuUsPerToken: number, interTokenAddedP99Ms: number) => ({ streams: 10_000, kibPerStream, gatewayCpuUsPerToken, eventLoopDelayP99Ms: 10, interTokenAddedP99Ms });
type Paths = Record<"direct" | "floor-sse" | "floor-grpc" | "sluice-grpc" | "sluice-sse", number>;

/** A run whose paths' TTFT p50 at 1 stream, CPU per delta and capacity figures all scale with one number per path. */
function run(figures: Paths, withGrpcFloor = true): GoalInput {
  const kinds = Object.keys(figures).filter((k) => withGrpcFloor || k !== "floor-grpc") as Array<keyof Paths>;
  const each = <T>(f: (n: number) => T) => Object.fromEntries(kinds.map((k) => [k, f(figures[k])]));
  const { direct: _direct, ...capacity } = each((n) => cap(n, n, n));
  return {
    ...base,
    ttft: { levels: [1, 100, 1000], results: each(ttftAt) },
    throughput: { results: each((n) => ({ gatewayCpuSPer100k: n })) },
    capacity: { results: capacity as unknown as GoalInput["capacity"]["results"] },
    cancel: { results: each((n) => ({ closeMs: { p99: n }, notClosed: 0 })) },
  };
}

const verdicts = (r: GoalInput) => Object.fromEntries(goals(r).map((g) => [g.id, g.met]));
const measured = (r: GoalInput, id: string) => goals(r).find((g) => g.id === id)!.measured;

describe("each edge against its own floor", () => {
  it("meets goals 1–5 when each edge is within its own floor's margin, though the gRPC edge is far above the HTTP floor", () => {
    const r = run({ direct: 1, "floor-sse": 2, "floor-grpc": 4, "sluice-grpc": 4.1, "sluice-sse": 2.1 });
    expect(verdicts(r)).toMatchObject({ "ttft-overhead": true, "ttft-load": true, capacity: true, cancel: true });
    // CPU: the peer of the committed run is far above these figures; only the floors decide.
    expect(verdicts(r)["throughput-cpu"]).toBe(true);
    expect(measured(r, "ttft-overhead")).toContain("floors: gRPC +3 ms, HTTP +1 ms");
  });

  it("fails the gRPC edge against a gRPC floor it is far above, though the HTTP floor would let it pass", () => {
    const r = run({ direct: 1, "floor-sse": 8, "floor-grpc": 2, "sluice-grpc": 8, "sluice-sse": 8 });
    expect(verdicts(r)).toMatchObject({ "ttft-overhead": false, "ttft-load": false, capacity: false, "throughput-cpu": false, cancel: false });
  });

  it("fails the SSE facade against the HTTP floor, whatever the gRPC floor", () => {
    const r = run({ direct: 1, "floor-sse": 2, "floor-grpc": 8, "sluice-grpc": 2, "sluice-sse": 8 });
    expect(verdicts(r)).toMatchObject({ "ttft-overhead": false, "ttft-load": false, capacity: false, "throughput-cpu": false, cancel: false });
  });

  it("holds the gRPC edge to the HTTP floor, and says so, in a run from before the gRPC floor was measured", () => {
    const r = run({ direct: 1, "floor-sse": 4, "floor-grpc": 1, "sluice-grpc": 4.1, "sluice-sse": 4.1 }, false);
    expect(verdicts(r)).toMatchObject({ "ttft-overhead": true, "ttft-load": true, capacity: true, "throughput-cpu": true, cancel: true });
    for (const id of ["ttft-overhead", "capacity", "throughput-cpu", "cancel"]) expect(measured(r, id)).toContain("no gRPC floor in this run");
  });
});
