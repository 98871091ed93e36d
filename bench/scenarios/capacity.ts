import { type CapacityDeps, type CapacityResult, capacityRun, runtimeAt } from "../capacity.js";
import { load, log, type Services, simIdle, simReset, startFloor, startGateway } from "../services.js";

// 3. Capacity ---------------------------------------------------------------
/**
 * The floor, the gRPC edge and the SSE facade, each on a fresh process of
 * its own warmed like the others (the same JIT state, and no RSS left over
 * from an earlier run to hide the growth being measured). The top-level
 * fields are the gRPC run's, as before the floor and the facade were measured.
 */
export async function capacityScenario(s: Services) {
  const deps: CapacityDeps = { sizes: s.size.capacity, load, simIdle: () => simIdle(s), simReset: () => simReset(s), log };
  const results: Partial<Record<"floor-sse" | "sluice-grpc" | "sluice-sse", CapacityResult>> = {};
  for (const kind of ["floor-sse", "sluice-grpc", "sluice-sse"] as const) {
    const fresh = kind === "floor-sse" ? await startFloor(s.simOpenAi) : await startGateway(s, { server: { debugEndpoints: true } }, { exposeGc: true });
    try {
      const target = kind === "floor-sse" ? { kind, url: fresh.url, model: "sim-1" } : { kind, url: kind === "sluice-sse" ? `${fresh.url}/v1` : fresh.url, model: "bench" };
      await load({ scenario: "ttft", target, ...s.size.ttft.warmUp, prompt: "#sim tokens=2" });
      const stats = kind === "floor-sse" ? `${new URL(fresh.url).origin}/_floor/stats` : `${fresh.url}/debug/runtime`;
      results[kind] = await capacityRun({ target, runtime: runtimeAt(stats), cpuSeconds: () => fresh.proc.cpuSeconds(), socketsPerStream: kind === "sluice-grpc" ? 1 : 2 }, deps);
    } finally {
      await fresh.proc.stop();
    }
  }
  return { ...results["sluice-grpc"]!, results: results as Record<"floor-sse" | "sluice-grpc" | "sluice-sse", CapacityResult> };
}
