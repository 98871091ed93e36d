import { type CapacityDeps, capacityRun, runtimeAt } from "../capacity.js";
import { load, log, type Services, simIdle, simReset, startGateway } from "../services.js";
import { round } from "../stats.js";
import type { TargetSpec } from "../targets.js";

/** The edges a deployment sizes for: the SSE facade most clients use, and the gRPC edge. */
type SizingEdge = "sluice-sse" | "sluice-grpc";
const EDGES: readonly SizingEdge[] = ["sluice-sse", "sluice-grpc"];

/**
 * How much is measured. Memory: streams held open at 1 token/s, at three
 * counts, so that a per-stream figure that is not linear shows. CPU: a fixed
 * token rate (streams × tokens per second) at a pace models really stream at
 * (20 tokens/s per stream). Three repetitions: the machine is shared.
 */
interface SizingPlan {
  readonly streamCounts: readonly number[];
  readonly slowTokens: number;
  readonly rate: { readonly streams: number; readonly intervalMs: number; readonly tokens: number };
  readonly repetitions: number;
}
const SIZING: Record<Services["mode"], SizingPlan> = {
  // 30 tokens at 1 token/s: streams outlive the ramp even when a loaded machine opens them at a few hundred a second.
  quick: { streamCounts: [250, 500, 1_000], slowTokens: 30, rate: { streams: 50, intervalMs: 50, tokens: 200 }, repetitions: 3 },
  full: { streamCounts: [250, 500, 1_000], slowTokens: 40, rate: { streams: 50, intervalMs: 50, tokens: 600 }, repetitions: 3 },
};

/** One repetition's figures for one edge. */
interface SizingSample {
  /** Peak RSS over the idle (after GC) RSS, per 1,000 streams, at each stream count. */
  readonly mibPer1kStreams: Record<number, number>;
  /** Live heap (after GC, at the plateau) over idle, per 1,000 streams, at each stream count. */
  readonly liveHeapMibPer1kStreams: Record<number, number>;
  /** Gateway CPU-seconds per second for 1,000 tokens/s, slow streams (1 token/s each, one write per token), at each stream count. */
  readonly cpuPer1kTokensSlow: Record<number, number>;
  /** Gateway CPU-seconds per second for 1,000 tokens/s at 20 tokens/s per stream. */
  readonly cpuPer1kTokensPaced: number;
  readonly idleRssMiB: number;
  readonly failed: number;
}

/** A fresh gateway on the simulator, as a deployment runs it (no limits, ledger or cache), with `/debug/runtime` on. */
async function freshGateway(s: Services, edge: SizingEdge) {
  const gateway = await startGateway(s, { server: { debugEndpoints: true, maxConnections: 20_000 } }, { exposeGc: true });
  const target: TargetSpec = { kind: edge, url: edge === "sluice-sse" ? `${gateway.url}/v1` : gateway.url, model: "bench" };
  await load({ scenario: "ttft", target, ...s.size.ttft.warmUp, prompt: "#sim tokens=2" });
  return { ...gateway, target, runtime: runtimeAt(`${gateway.url}/debug/runtime`) };
}

/** Gateway CPU-seconds per second per 1,000 tokens/s while `streams` stream at one token each `intervalMs`. */
async function pacedCpu(s: Services, edge: SizingEdge, rate: SizingPlan["rate"]): Promise<{ cpu: number; failed: number }> {
  const gateway = await freshGateway(s, edge);
  try {
    await simIdle(s);
    const before = gateway.proc.cpuSeconds();
    const r = await load<{ completed: number; failed: number }>({
      scenario: "capacity",
      target: gateway.target,
      streams: rate.streams,
      rampPerSecond: 1_000,
      tokens: rate.tokens,
      intervalMs: rate.intervalMs,
      prompt: `#sim tokens=${rate.tokens} delay_ms=${rate.intervalMs} ttft_ms=${rate.intervalMs}`,
    });
    const cpuS = gateway.proc.cpuSeconds() - before;
    // CPU-seconds for 1,000 tokens = CPU-seconds each second at 1,000 tokens/s.
    return { cpu: (cpuS / (r.completed * rate.tokens)) * 1_000, failed: r.failed };
  } finally {
    await gateway.proc.stop();
    await simReset(s);
  }
}

async function sample(s: Services, edge: SizingEdge, plan: SizingPlan): Promise<SizingSample> {
  const mib: Record<number, number> = {};
  const live: Record<number, number> = {};
  const slow: Record<number, number> = {};
  let idleRssMiB = 0;
  let failed = 0;
  for (const streams of plan.streamCounts) {
    // A fresh process per count: RSS left by a larger run would hide a smaller one's growth.
    const gateway = await freshGateway(s, edge);
    try {
      const deps: CapacityDeps = { sizes: { streams, tokens: plan.slowTokens, plateauWindowMs: 2_000 }, load, simIdle: () => simIdle(s), simReset: () => simReset(s), log };
      const r = await capacityRun({ target: gateway.target, runtime: gateway.runtime, cpuSeconds: () => gateway.proc.cpuSeconds(), socketsPerStream: edge === "sluice-grpc" ? 1 : 2 }, deps);
      // A run whose streams were never all open at once (the ramp outran by their end) says nothing of N concurrent streams.
      mib[streams] = r.reachedPlateau ? (r.kibPerStream * 1_000) / 1024 : Number.NaN;
      live[streams] = r.reachedPlateau ? (r.liveHeapKibPerStream * 1_000) / 1024 : Number.NaN;
      // µs per token at 1 token/s per stream: 1,000 tokens/s cost µs × 1,000 / 1e6 CPU-seconds a second.
      slow[streams] = r.gatewayCpuUsPerToken / 1_000;
      idleRssMiB = r.idleRssMiB;
      failed += r.failed;
    } finally {
      await gateway.proc.stop();
    }
  }
  const paced = await pacedCpu(s, edge, plan.rate);
  return { mibPer1kStreams: mib, liveHeapMibPer1kStreams: live, cpuPer1kTokensSlow: slow, cpuPer1kTokensPaced: paced.cpu, idleRssMiB, failed: failed + paced.failed };
}

/** Median, lowest and highest of the repetitions that measured something (`n` of them). */
function spread(values: readonly number[]): { median: number; min: number; max: number; n: number } {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, n: 0 };
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median: round(median, 3), min: round(sorted[0]!, 3), max: round(sorted[sorted.length - 1]!, 3), n: sorted.length };
}

// Sizing --------------------------------------------------------------------
/**
 * The two figures docs/deployment.md sizes a deployment by: memory per 1,000
 * concurrent streams and CPU per 1,000 tokens/s, on each edge, from fresh
 * gateways on the simulator. Repetitions alternate the edges, so that a
 * burst of load from elsewhere on the machine does not land on one edge only.
 */
export async function sizingScenario(s: Services) {
  const plan = SIZING[s.mode];
  const samples: Record<SizingEdge, SizingSample[]> = { "sluice-sse": [], "sluice-grpc": [] };
  for (let rep = 0; rep < plan.repetitions; rep++) {
    for (const edge of EDGES) {
      const one = await sample(s, edge, plan);
      samples[edge].push(one);
      log(`sizing ${edge} #${rep + 1}: MiB/1k streams ${JSON.stringify(one.mibPer1kStreams)}, CPU s/s per 1k tok/s slow ${JSON.stringify(one.cpuPer1kTokensSlow)} paced ${round(one.cpuPer1kTokensPaced, 3)}`);
    }
  }
  const summarise = (list: readonly SizingSample[]) => ({
    mibPer1kStreams: Object.fromEntries(plan.streamCounts.map((n) => [n, spread(list.map((x) => x.mibPer1kStreams[n]!))])),
    liveHeapMibPer1kStreams: Object.fromEntries(plan.streamCounts.map((n) => [n, spread(list.map((x) => x.liveHeapMibPer1kStreams[n]!))])),
    cpuPer1kTokensSlow: Object.fromEntries(plan.streamCounts.map((n) => [n, spread(list.map((x) => x.cpuPer1kTokensSlow[n]!))])),
    cpuPer1kTokensPaced: spread(list.map((x) => x.cpuPer1kTokensPaced)),
    idleRssMiB: spread(list.map((x) => x.idleRssMiB)),
    failed: list.reduce((a, x) => a + x.failed, 0),
  });
  return { plan, results: { "sluice-sse": summarise(samples["sluice-sse"]), "sluice-grpc": summarise(samples["sluice-grpc"]) }, samples };
}
