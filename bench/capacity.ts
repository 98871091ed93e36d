import { readFileSync } from "node:fs";
import type { LoadSpec } from "./load.js";
import type { Sizes } from "./modes.js";
import { round, type summary } from "./stats.js";
import type { TargetSpec } from "./targets.js";

const KiB = 1024;
const MiB = 1024 * 1024;
/** The simulator's pace in this scenario: one token a second. */
const INTERVAL_MS = 1000;

/** What the gateway's `/debug/runtime` and the floor's `/_floor/stats` both answer. */
export interface Runtime {
  rssBytes: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  externalBytes: number;
  activeStreams: number;
  eventLoopDelayMs: { p50: number; p99: number; max: number };
}

export type ReadRuntime = (options?: { reset?: boolean; gc?: boolean }) => Promise<Runtime>;

/** A runtime reader for a stats URL (`…/debug/runtime`, `…/_floor/stats`). */
export function runtimeAt(url: string): ReadRuntime {
  return async (options = {}) => {
    const query = [options.reset ? "reset=1" : "", options.gc ? "gc=1" : ""].filter(Boolean).join("&");
    const res = await fetch(`${url}${query ? `?${query}` : ""}`);
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
    return (await res.json()) as Runtime;
  };
}

/** One path of the capacity scenario: where the streams go, and the process that carries them. */
export interface CapacityPath {
  readonly target: TargetSpec;
  readonly runtime: ReadRuntime;
  readonly cpuSeconds: () => number;
  /** Sockets the carrying process holds per stream: 2 for an HTTP/1.1 edge (client and upstream), 1 for gRPC (streams share a few connections). */
  readonly socketsPerStream: number;
}

export interface CapacityDeps {
  readonly sizes: Sizes["capacity"];
  readonly load: <T>(spec: LoadSpec, timeoutMs?: number) => Promise<T>;
  readonly simIdle: () => Promise<void>;
  readonly simReset: () => Promise<void>;
  readonly log: (message: string) => void;
}

export type CapacityResult = Awaited<ReturnType<typeof capacityRun>>;

/** Open files a process of this benchmark may hold (the soft limit its children inherit). */
function openFilesLimit(): number {
  const match = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync("/proc/self/limits", "utf8"));
  return !match || match[1] === "unlimited" ? Number.POSITIVE_INFINITY : Number(match[1]);
}

/**
 * The most streams a path can carry here: at two sockets per stream, a
 * 20,000 open-file limit (this machine's, not raisable without privilege)
 * holds 9,872 streams, not 10,000. The path's `streams` says what ran; its
 * per-stream figures are comparable with the others'.
 */
function streamsFor(path: CapacityPath, wanted: number): number {
  const headroom = 256;
  return Math.min(wanted, Math.floor((openFilesLimit() - headroom) / path.socketsPerStream));
}

/**
 * Slow streams (1 token/s) held open together through one path, with the
 * carrying process (a gateway, or the floor proxy) measured meanwhile:
 * RSS growth over its idle figure, CPU per token, event-loop delay over a
 * window at the plateau, and the delay added to the upstream's pace as the
 * client sees it (`interTokenAddedMs`, see bench/load.ts).
 */
export async function capacityRun(path: CapacityPath, deps: CapacityDeps) {
  // Streams must outlive the ramp (2 000/s at best, slower on a loaded machine) so that a plateau is reached.
  const { tokens, plateauWindowMs } = deps.sizes;
  const streams = streamsFor(path, deps.sizes.streams);
  if (streams < deps.sizes.streams) deps.log(`capacity ${path.target.kind}: ${streams} streams, not ${deps.sizes.streams}: the open-file limit holds no more at ${path.socketsPerStream} sockets per stream`);
  await deps.simIdle();
  const idle = await path.runtime({ gc: true });
  await path.runtime({ reset: true });
  const cpuBefore = path.cpuSeconds();
  const run = deps.load<{ completed: number; failed: number; wallMs: number; errors: Record<string, number>; interTokenAddedMs: ReturnType<typeof summary> }>(
    {
      scenario: "capacity",
      target: { ...path.target, connections: Math.ceil(streams / 500) },
      streams,
      // 1,000 a second: at 2,000 the listen backlogs (511 by default, the floor's and the gateway's alike) overflowed on this machine and connects timed out.
      rampPerSecond: 1_000,
      tokens,
      intervalMs: INTERVAL_MS,
      prompt: `#sim tokens=${tokens} delay_ms=${INTERVAL_MS} ttft_ms=${INTERVAL_MS}`,
    },
    600_000,
  );
  let peak = idle;
  let plateau: Runtime | undefined;
  let plateauLive: Runtime | undefined;
  let done = false;
  let maxActive = 0;
  void run.finally(() => (done = true));
  while (!done) {
    await new Promise((r) => setTimeout(r, 250)); // sampling interval of a monitor, not synchronisation
    const now = await path.runtime().catch(() => undefined);
    if (!now) continue;
    // BENCH_TRACE=1: the whole memory curve, to tell live growth from garbage piling up between full GCs.
    if (process.env.BENCH_TRACE)
      deps.log(`capacity sample: active ${now.activeStreams} rss ${round(now.rssBytes / MiB)} heapUsed ${round(now.heapUsedBytes / MiB)} heapTotal ${round(now.heapTotalBytes / MiB)} external ${round(now.externalBytes / MiB)} MiB`);
    if (now.rssBytes > peak.rssBytes) peak = now;
    maxActive = Math.max(maxActive, now.activeStreams);
    if (!plateau && now.activeStreams >= streams * 0.99) {
      await path.runtime({ reset: true });
      // The delay histogram's plateau window: long enough to hold several scavenges and a full GC, so that p99 is not one pause or none.
      await new Promise((r) => setTimeout(r, plateauWindowMs));
      plateau = await path.runtime();
      plateauLive = await path.runtime({ gc: true });
    }
  }
  const r = await run;
  const cpuS = path.cpuSeconds() - cpuBefore;
  const result = {
    streams,
    completed: r.completed,
    failed: r.failed,
    errors: r.errors,
    idleRssMiB: idle.rssBytes / MiB,
    peakRssMiB: peak.rssBytes / MiB,
    kibPerStream: (peak.rssBytes - idle.rssBytes) / KiB / streams,
    liveHeapKibPerStream: plateauLive ? (plateauLive.heapUsedBytes - idle.heapUsedBytes) / KiB / streams : Number.NaN,
    eventLoopDelayP99Ms: plateau?.eventLoopDelayMs.p99 ?? Number.NaN,
    reachedPlateau: plateau !== undefined,
    // Each token is its own upstream read and client write here: the per-event cost, not the batched one of the throughput run.
    gatewayCpuUsPerToken: (cpuS * 1e6) / (streams * tokens),
    interTokenAddedP99Ms: r.interTokenAddedMs.p99,
    interTokenAddedMs: r.interTokenAddedMs,
    maxActive,
    wallS: r.wallMs / 1000,
  };
  deps.log(
    `capacity ${path.target.kind}: ${r.completed}/${streams} completed (at most ${maxActive} at once), ${round(result.kibPerStream)} KiB/stream, loop p99 ${result.eventLoopDelayP99Ms} ms, CPU ${round(result.gatewayCpuUsPerToken)} µs/token, inter-token added p99 ${round(result.interTokenAddedP99Ms)} ms`,
  );
  await deps.simReset();
  return result;
}
