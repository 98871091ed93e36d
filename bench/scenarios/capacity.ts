import { type CapacityDeps, type CapacityResult, capacityRun, runtimeAt } from "../capacity.js";
import type { Proc } from "../procs.js";
import { load, log, type Services, simIdle, simReset, startFloor, startGateway, startGrpcFloor } from "../services.js";
import type { TargetSpec } from "../targets.js";

/** The paths the capacity scenario carries: both floors, the gRPC edge and the SSE facade. */
export type CapacityKind = "floor-sse" | "floor-grpc" | "sluice-grpc" | "sluice-sse";
const KINDS: readonly CapacityKind[] = ["floor-sse", "floor-grpc", "sluice-grpc", "sluice-sse"];

/** A fresh process for one path: where its streams go and where its runtime figures are read. */
async function freshPath(s: Services, kind: CapacityKind): Promise<{ proc: Proc; target: TargetSpec; stats: string }> {
  if (kind === "floor-sse") {
    const floor = await startFloor(s.simOpenAi);
    return { proc: floor.proc, target: { kind, url: floor.url, model: "sim-1" }, stats: `${new URL(floor.url).origin}/_floor/stats` };
  }
  if (kind === "floor-grpc") {
    const floor = await startGrpcFloor(s.simOpenAi);
    return { proc: floor.proc, target: { kind, url: floor.url, model: "sim-1" }, stats: floor.stats };
  }
  const gateway = await startGateway(s, { server: { debugEndpoints: true } }, { exposeGc: true });
  return { proc: gateway.proc, target: { kind, url: kind === "sluice-sse" ? `${gateway.url}/v1` : gateway.url, model: "bench" }, stats: `${gateway.url}/debug/runtime` };
}

// 3. Capacity ---------------------------------------------------------------
/**
 * Both floors, the gRPC edge and the SSE facade, each on a fresh process of
 * its own warmed like the others (the same JIT state, and no RSS left over
 * from an earlier run to hide the growth being measured): the gRPC edge is
 * held against the gRPC floor, the facade against the HTTP floor. The
 * top-level fields are the gRPC run's, as before the floors and the facade
 * were measured.
 */
export async function capacityScenario(s: Services) {
  const deps: CapacityDeps = { sizes: s.size.capacity, load, simIdle: () => simIdle(s), simReset: () => simReset(s), log };
  const results: Partial<Record<CapacityKind, CapacityResult>> = {};
  for (const kind of KINDS) {
    const fresh = await freshPath(s, kind);
    try {
      await load({ scenario: "ttft", target: fresh.target, ...s.size.ttft.warmUp, prompt: "#sim tokens=2" });
      const grpc = kind === "sluice-grpc" || kind === "floor-grpc";
      results[kind] = await capacityRun({ target: fresh.target, runtime: runtimeAt(fresh.stats), cpuSeconds: () => fresh.proc.cpuSeconds(), socketsPerStream: grpc ? 1 : 2 }, deps);
    } finally {
      await fresh.proc.stop();
    }
  }
  // Runs before the gRPC floor was measured here have no `floor-grpc`.
  return { ...results["sluice-grpc"]!, results: results as Record<Exclude<CapacityKind, "floor-grpc">, CapacityResult> & { "floor-grpc"?: CapacityResult } };
}
