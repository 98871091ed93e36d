import { load, log, type Services, simReset, targetSpec, targets, withFloors } from "../services.js";
import { round } from "../stats.js";

// 2. Throughput -------------------------------------------------------------
export async function throughputScenario(s: Services) {
  const concurrency = 10;
  const { tokens } = s.size.throughput;
  const out: Record<string, { deltasPerS: number; deltas: number; messages: number; gatewayCpuSPer100k?: number; clientCpuSPer100k: number; allCpuSPer100k: number; errors: number }> = {};
  // The gRPC edge may merge deltas into fewer messages: every path is counted
  // in upstream deltas, its text characters over the direct path's characters per delta.
  let charsPerDelta: number | undefined;
  // Each floor's own CPU is its `gatewayCpuSPer100k`: the least a relay process can spend per delta here, over HTTP/1.1 SSE or gRPC.
  for (const kind of withFloors(targets(s))) {
    const gatewayProc = kind === "peer-sse" ? s.peer : kind === "floor-sse" ? s.floor : kind === "floor-grpc" ? s.grpcFloor : kind === "direct" ? undefined : s.gateway;
    const procs = [s.sim, ...(gatewayProc ? [gatewayProc] : [])];
    // Warm-up, the same run once unmeasured: a cold gateway's JIT (up to twice
    // the steady-state CPU on the first run) would be measured, not the gateway.
    await load({ scenario: "throughput", target: targetSpec(s, kind), concurrency, prompt: `#sim tokens=${tokens}` });
    const before = procs.map((p) => p.cpuSeconds());
    const r = await load<{ deltas: number; chars: number; wallMs: number; clientCpuS: number; errors: number }>({
      scenario: "throughput",
      target: targetSpec(s, kind),
      concurrency,
      prompt: `#sim tokens=${tokens}`,
    });
    const used = procs.map((p, i) => p.cpuSeconds() - before[i]!);
    charsPerDelta ??= r.chars / Math.max(1, r.deltas);
    const deltas = r.chars / charsPerDelta;
    const per100k = (cpu: number) => (cpu / Math.max(1, deltas)) * 100_000;
    out[kind] = {
      deltas,
      messages: r.deltas,
      deltasPerS: deltas / (r.wallMs / 1000),
      ...(gatewayProc ? { gatewayCpuSPer100k: per100k(used[1]!) } : {}),
      // On two cores the load generator competes with the gateway: its own cost goes beside the gateway's.
      clientCpuSPer100k: per100k(r.clientCpuS),
      allCpuSPer100k: per100k(used.reduce((a, b) => a + b, 0) + r.clientCpuS),
      errors: r.errors,
    };
    log(`throughput ${kind}: ${Math.round(out[kind]!.deltasPerS)} deltas/s in ${r.deltas} messages, gateway CPU ${round(out[kind]!.gatewayCpuSPer100k ?? 0)} s/100k`);
    await simReset(s);
  }
  return { concurrency, tokens, results: out };
}
