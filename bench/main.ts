import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { parseArgs } from "node:util";
import { stringify } from "yaml";
import type { RequestRecord } from "../src/simulator/records.js";
import { type SemanticResult, semanticScenario, servePgliteOverWire } from "./semantic.js";
import { simulatedText } from "../src/simulator/text.js";
import type { LoadSpec } from "./load.js";
import { chartName, type Mode, resultsName, SIZES } from "./modes.js";
import { type Proc, runJson, startUntil } from "./procs.js";
import { type CapacityDeps, type CapacityResult, capacityRun, type Runtime, runtimeAt } from "./capacity.js";
import { lineChart, table } from "./report.js";
import { round, summary } from "./stats.js";
import { resumableSummary, resumeScenario, resumeSection } from "./resume.js";
import { goals } from "./goals.js";
import { type PiiResult, piiScenario, piiSection } from "./pii.js";
import { type NeedsResult, needsScenario, needsSection } from "./needs.js";
import { type BatchResult, batchScenario, batchSection } from "./batch.js";
import { agentScenario, agentSection } from "./agents.js";
import type { TargetKind, TargetSpec } from "./targets.js";
import { BENCH_TIMEOUTS, GATEWAY_NODE_FLAGS } from "./gateway-launch.js";

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    "no-peer": { type: "boolean", default: false },
    /** Run one scenario alone (`admission`, `resume`, `ttft`, `throughput`, `capacity`, `cancel`, `slow`, `telemetry`, `pii`, `needs`, …), written to bench/results/<mode>-<name>.json (admission and resume also .md). */
    only: { type: "string" },
    /** Write the report (.md, chart, goals) again from a full or quick run's JSON, measuring nothing: after a change to how results are shown. */
    render: { type: "string" },
  },
});
const MODE: Mode = args.quick ? "quick" : "full";
const SIZE = SIZES[MODE];
const ROOT = process.cwd();
const LOAD = join(ROOT, "dist/bench/load.js");
const RESULTS = join(ROOT, "bench/results");
const KiB = 1024;
/** Hedge after this long without a first token: above the healthy p99, far below the 2 s tail. */
const HEDGE_AFTER_MS = 250;

interface Services {
  simOrigin: string;
  simOpenAi: string;
  sim: Proc;
  gateway: Proc;
  gatewayUrl: string;
  peer?: Proc;
  peerUrl?: string;
  /** The floor (bench/floor-proxy.ts): a byte-for-byte Node proxy, the cost of the hop alone. */
  floor: Proc;
  floorUrl: string;
  /** The same gateway with a virtual key, Redis limits and a budget on every request. */
  limited: Proc;
  limitedUrl: string;
  /** A redis-server of the benchmark's own (its command counts are the gateway's alone). */
  redis?: Proc;
  redisPort: number;
}

/** The limited gateway's key: every limit and the budget on, far above what the load reaches. */
const BENCH_KEY = "sk-bench-limited-0123456789abcdef";
/** A key with the same limits in a team in a business line, each level with every limit and a budget: admission checks three levels. */
const BENCH_TEAM_KEY = "sk-bench-team-fedcba9876543210";

function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function startServices(): Promise<Services> {
  const { proc: sim, value: simInfo } = await startUntil(process.execPath, ["dist/src/simulator/main.js", "--port", "0"], (line) =>
    line.startsWith("{") && line.includes("simulator listening") ? (JSON.parse(line) as { origin: string; openAiBaseUrl: string }) : undefined,
  );
  const dir = await mkdtemp(join(tmpdir(), "sluice-bench-"));
  const configFile = join(dir, "sluice.yaml");
  await writeFile(
    configFile,
    stringify({
      // The SSE capacity run holds one connection per stream, about as many as the default ceiling (10,000):
      // the runtime probe beside them was once refused with a 503, and the whole run lost.
      server: { debugEndpoints: true, maxConnections: 20_000 },
      log: { level: "info" },
      providers: {
        sim: { kind: "openai", baseUrl: simInfo.openAiBaseUrl, timeouts: BENCH_TIMEOUTS },
        // The resilience scenarios: a flaky primary and a healthy backup, both the simulator.
        // Breakers off: an open breaker would hide the failovers being measured
        // (and, without failover, turn a 30% failure rate into most requests).
        primary: { kind: "openai", baseUrl: simInfo.openAiBaseUrl, timeouts: BENCH_TIMEOUTS, breaker: { failures: 10_000 } },
        backup: { kind: "openai", baseUrl: simInfo.openAiBaseUrl, timeouts: BENCH_TIMEOUTS, breaker: { failures: 10_000 } },
      },
      models: {
        bench: { provider: "sim", model: "sim-1" },
        "primary-only": { provider: "primary", model: "sim-1?tokens=2&fail=reset_before_headers&fail_rate=0.3&script=fo-alone" },
        failover: {
          targets: [
            { provider: "primary", model: "sim-1?tokens=2&fail=reset_before_headers&fail_rate=0.3&script=fo" },
            { provider: "backup", model: "sim-1?tokens=2&script=fo-backup" },
          ],
        },
        "heavy-tail": {
          targets: [
            { provider: "primary", model: "sim-1?tokens=2&slow_every=20&slow_ttft_ms=2000&script=tail" },
            { provider: "backup", model: "sim-1?tokens=2&script=tail-backup" },
          ],
        },
        hedged: {
          hedge: { afterMs: HEDGE_AFTER_MS },
          targets: [
            { provider: "primary", model: "sim-1?tokens=2&slow_every=20&slow_ttft_ms=2000&script=hedge" },
            { provider: "backup", model: "sim-1?tokens=2&script=hedge-backup" },
          ],
        },
      },
    }),
  );
  const { proc: gateway, value: gatewayUrl } = await startUntil(
    process.execPath,
    [...GATEWAY_NODE_FLAGS, "--expose-gc", "dist/src/main.js", "--config", configFile, "--port", "0"],
    (line) => (line.includes('"server.listening"') ? ((JSON.parse(line) as { url: string }).url) : undefined),
  );
  const limits = await startLimitedGateway(dir, simInfo.openAiBaseUrl);
  const { proc: floor, url: floorUrl } = await startFloor(simInfo.openAiBaseUrl);
  const services: Services = { simOrigin: simInfo.origin, simOpenAi: simInfo.openAiBaseUrl, sim, gateway, gatewayUrl, floor, floorUrl, ...limits };
  if (!args["no-peer"]) {
    const entry = join(ROOT, "bench/node_modules/@portkey-ai/gateway/build/start-server.js");
    if (!existsSync(entry)) {
      log("installing the peer gateway (bench/package.json)");
      execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: join(ROOT, "bench"), stdio: "inherit" });
    }
    const port = await freePort();
    const { proc } = await startUntil(
      process.execPath,
      ["-r", join(ROOT, "bench/peer/force-loopback.cjs"), entry, `--port=${port}`, "--headless"],
      (line) => (line.includes("Ready for connections") ? true : undefined),
      { env: { ...process.env, NODE_ENV: "production" }, cwd: join(ROOT, "bench") },
    );
    services.peer = proc;
    services.peerUrl = `http://127.0.0.1:${port}/v1`;
  }
  return services;
}

/** A floor proxy (bench/floor-proxy.ts) on the simulator; --expose-gc so that its idle heap is read after a collection, as the gateway's is. */
async function startFloor(simOpenAi: string): Promise<{ proc: Proc; url: string }> {
  const { proc, value } = await startUntil(process.execPath, ["--expose-gc", join(ROOT, "dist/bench/floor-proxy.js"), simOpenAi], (line) =>
    line.startsWith('{"url"') ? (JSON.parse(line) as { url: string }).url : undefined,
  );
  return { proc, url: value };
}

/**
 * Redis for the admission scenario: a redis-server of our own on a free
 * port when the binary is there (so INFO commandstats counts only this
 * gateway's commands), else the machine's on 6379 under a prefix of our own.
 */
async function startRedis(): Promise<{ redis?: Proc; redisPort: number }> {
  try {
    execFileSync("redis-server", ["--version"], { stdio: "ignore" });
  } catch {
    log("no redis-server binary: using 127.0.0.1:6379 (command counts include other clients)");
    return { redisPort: 6379 };
  }
  const port = await freePort();
  const { proc } = await startUntil(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    (line) => (line.includes("Ready to accept connections") ? true : undefined),
  );
  return { redis: proc, redisPort: port };
}

const BENCH_LIMITS = { requestsPerMinute: 1_000_000, tokensPerMinute: 1_000_000_000, concurrentStreams: 1_000_000 };
const BENCH_BUDGET = { usd: 1_000_000_000, period: "month" } as const;

async function startLimitedGateway(dir: string, simOpenAi: string): Promise<Pick<Services, "limited" | "limitedUrl" | "redis" | "redisPort">> {
  const { redis, redisPort } = await startRedis();
  const configFile = join(dir, "sluice-limited.yaml");
  const { createHash } = await import("node:crypto");
  await writeFile(
    configFile,
    stringify({
      log: { level: "info" },
      providers: { sim: { kind: "openai", baseUrl: simOpenAi, timeouts: BENCH_TIMEOUTS } },
      models: { bench: { provider: "sim", model: "sim-1", price: { inputPerMTok: 1, outputPerMTok: 2 } } },
      auth: {
        keys: [
          {
            name: "bench",
            sha256: createHash("sha256").update(BENCH_KEY).digest("hex"),
            limits: BENCH_LIMITS,
            budget: BENCH_BUDGET,
          },
          { name: "bench-member", sha256: createHash("sha256").update(BENCH_TEAM_KEY).digest("hex"), team: "bench-team", limits: BENCH_LIMITS, budget: BENCH_BUDGET },
        ],
        teams: [{ name: "bench-team", businessLine: "bench-line", limits: BENCH_LIMITS, budget: BENCH_BUDGET }],
        businessLines: [{ name: "bench-line", limits: BENCH_LIMITS, budget: BENCH_BUDGET }],
      },
      // Closed: Redis trouble shows as errors in the results, never as a quiet local fallback.
      store: { redis: { url: `redis://127.0.0.1:${redisPort}`, prefix: `sluice-bench:${process.pid}:`, failMode: "closed", timeoutMs: 2_000 } },
    }),
  );
  const { proc: limited, value: limitedUrl } = await startUntil(
    process.execPath,
    [...GATEWAY_NODE_FLAGS, "dist/src/main.js", "--config", configFile, "--port", "0"],
    (line) => (line.includes('"server.listening"') ? ((JSON.parse(line) as { url: string }).url) : undefined),
  );
  return { limited, limitedUrl, ...(redis ? { redis } : {}), redisPort };
}

function targetSpec(s: Services, kind: TargetKind): TargetSpec {
  switch (kind) {
    case "direct":
      return { kind, url: s.simOpenAi, model: "sim-1" };
    case "direct-embed":
      return { kind, url: s.simOpenAi, model: "sim-embed" };
    case "floor-sse":
      return { kind, url: s.floorUrl, model: "sim-1" };
    case "sluice-grpc":
    case "sluice-grpc-connect":
      return { kind, url: s.gatewayUrl, model: "bench" };
    case "sluice-sse":
      return { kind, url: `${s.gatewayUrl}/v1`, model: "bench" };
    case "peer-sse":
      return { kind, url: s.peerUrl!, model: "sim-1", upstream: s.simOpenAi };
  }
}

function targets(s: Services): TargetKind[] {
  return s.peer ? ["direct", "sluice-grpc", "sluice-sse", "peer-sse"] : ["direct", "sluice-grpc", "sluice-sse"];
}

/** The targets with the floor after the direct baseline: where the hop's own cost is the question (TTFT, cancellation). */
function withFloor(kinds: TargetKind[]): TargetKind[] {
  return kinds.flatMap((k) => (k === "direct" ? [k, "floor-sse" as const] : [k]));
}

async function load<T>(spec: LoadSpec, timeoutMs = 300_000): Promise<T> {
  return runJson<T>([LOAD, JSON.stringify(spec)], timeoutMs);
}

async function simReset(s: Services): Promise<void> {
  await fetch(`${s.simOrigin}/_sim/reset`, { method: "POST" });
}

/** Waits until the simulator serves no request: a peer that does not cancel upstream leaves streams running. */
async function simIdle(s: Services): Promise<void> {
  const res = await fetch(`${s.simOrigin}/_sim/idle?timeout_ms=120000`);
  if (res.status !== 200) log(`simulator still busy: ${await res.text()}`);
}

async function simRecords(s: Services): Promise<RequestRecord[]> {
  return (await (await fetch(`${s.simOrigin}/_sim/requests`)).json()) as RequestRecord[];
}

function runtime(s: Services, options: { reset?: boolean; gc?: boolean } = {}): Promise<Runtime> {
  return runtimeAt(`${s.gatewayUrl}/debug/runtime`)(options);
}

const NAMES: Record<TargetKind, string> = {
  direct: "direct (baseline)",
  "sluice-grpc": "Sluice gRPC",
  "sluice-grpc-connect": "Sluice gRPC, connect-node client",
  "sluice-sse": "Sluice SSE facade",
  "peer-sse": "Portkey (peer)",
  "floor-sse": "floor: byte-for-byte Node proxy",
  "direct-embed": "the simulator's embeddings API",
};

// 1. TTFT overhead ---------------------------------------------------------
async function ttftScenario(s: Services) {
  const { levels, streams, warmUp, warmUpEachLevel } = SIZE.ttft;
  const prompt = "#sim tokens=2";
  const results: Record<string, Record<number, { p50: number; p99: number; n: number; errors: number }>> = {};
  // This is the first scenario: without a warm-up it measured a gateway whose
  // JIT had seen a handful of requests (a fresh gateway's first thousand
  // streams cost about twice the CPU of later ones), not a gateway in service.
  // The gRPC edge is also measured through connect-node's client, whose own
  // CPU (it shares the two cores) is part of what its callers see.
  const kinds: TargetKind[] = [...withFloor(targets(s)), "sluice-grpc-connect"];
  for (const kind of kinds) await load({ scenario: "ttft", target: targetSpec(s, kind), ...warmUp, prompt });
  for (const concurrency of levels) {
    for (const kind of kinds) {
      // Interleave targets per level so that machine noise hits all alike.
      const perLane = Math.max(1, Math.ceil((concurrency === 1 ? streams / 4 : streams) / concurrency));
      if (warmUpEachLevel) await load({ scenario: "ttft", target: targetSpec(s, kind), concurrency: Math.min(concurrency, 50), perLane: 2, prompt });
      const r = await load<{ samples: number[]; errors: number }>({ scenario: "ttft", target: targetSpec(s, kind), concurrency, perLane, prompt });
      (results[kind] ??= {})[concurrency] = { ...summary(r.samples), errors: r.errors };
      log(`ttft c=${concurrency} ${kind}: p50 ${round(results[kind]![concurrency]!.p50)} ms p99 ${round(results[kind]![concurrency]!.p99)} ms (${r.samples.length} streams, ${r.errors} errors)`);
    }
    await simReset(s);
  }
  return { levels, results };
}

// 2. Throughput -------------------------------------------------------------
async function throughputScenario(s: Services) {
  const concurrency = 10;
  const { tokens } = SIZE.throughput;
  const out: Record<string, { deltasPerS: number; deltas: number; messages: number; gatewayCpuSPer100k?: number; clientCpuSPer100k: number; allCpuSPer100k: number; errors: number }> = {};
  // The gRPC edge may merge deltas into fewer messages: every path is counted
  // in upstream deltas, its text characters over the direct path's characters per delta.
  let charsPerDelta: number | undefined;
  // The floor's own CPU is its `gatewayCpuSPer100k`: the least a proxy process can spend per delta here.
  for (const kind of withFloor(targets(s))) {
    const gatewayProc = kind === "peer-sse" ? s.peer : kind === "floor-sse" ? s.floor : kind === "direct" ? undefined : s.gateway;
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

// 3. Capacity ---------------------------------------------------------------
/**
 * The floor, the gRPC edge and the SSE facade, each on a fresh process of
 * its own warmed like the others (the same JIT state, and no RSS left over
 * from an earlier run to hide the growth being measured). The top-level
 * fields are the gRPC run's, as before the floor and the facade were measured.
 */
async function capacityScenario(s: Services) {
  const deps: CapacityDeps = { sizes: SIZE.capacity, load, simIdle: () => simIdle(s), simReset: () => simReset(s), log };
  const results: Partial<Record<"floor-sse" | "sluice-grpc" | "sluice-sse", CapacityResult>> = {};
  for (const kind of ["floor-sse", "sluice-grpc", "sluice-sse"] as const) {
    const fresh = kind === "floor-sse" ? await startFloor(s.simOpenAi) : await startGateway(s, { server: { debugEndpoints: true } }, { exposeGc: true });
    try {
      const target = kind === "floor-sse" ? { kind, url: fresh.url, model: "sim-1" } : { kind, url: kind === "sluice-sse" ? `${fresh.url}/v1` : fresh.url, model: "bench" };
      await load({ scenario: "ttft", target, ...SIZE.ttft.warmUp, prompt: "#sim tokens=2" });
      const stats = kind === "floor-sse" ? `${new URL(fresh.url).origin}/_floor/stats` : `${fresh.url}/debug/runtime`;
      results[kind] = await capacityRun({ target, runtime: runtimeAt(stats), cpuSeconds: () => fresh.proc.cpuSeconds(), socketsPerStream: kind === "sluice-grpc" ? 1 : 2 }, deps);
    } finally {
      await fresh.proc.stop();
    }
  }
  return { ...results["sluice-grpc"]!, results: results as Record<"floor-sse" | "sluice-grpc" | "sluice-sse", CapacityResult> };
}

// 4. Cancellation -----------------------------------------------------------
async function cancelScenario(s: Services) {
  const { total, tokens } = SIZE.cancel;
  const out: Record<
    string,
    { closeMs: ReturnType<typeof summary>; clientSendMs: ReturnType<typeof summary>; tokensAfterAbort: ReturnType<typeof summary>; notClosed: number; ranToCompletion: number }
  > = {};
  for (const kind of withFloor(targets(s))) {
    await simIdle(s);
    await simReset(s);
    const seed = 7;
    const r = await load<{ aborts: Array<{ tag: string; abortAt: number; sentAt: number; received: number }> }>({
      scenario: "cancel",
      target: targetSpec(s, kind),
      total,
      concurrency: 50,
      prompt: `#sim tokens=${tokens} delay_ms=10`,
      seed,
    });
    // Wait (bounded) for the simulator to have seen every close.
    let records: RequestRecord[] = [];
    for (let i = 0; i < 40; i++) {
      records = await simRecords(s);
      if (records.filter((x) => x.endedAt !== undefined).length >= r.aborts.length) break;
      await fetch(`${s.simOrigin}/_sim/wait?timeout_ms=250&tag=__none__`);
    }
    const byTag = new Map(records.map((x) => [x.tag, x]));
    const close: number[] = [];
    const send: number[] = [];
    const after: number[] = [];
    let notClosed = 0;
    let ranToCompletion = 0;
    for (const a of r.aborts) {
      const rec = byTag.get(a.tag);
      if (!rec?.clientClosedAt) {
        // The upstream request outlived the client: generated for nobody.
        notClosed++;
        if (rec?.outcome === "completed") ranToCompletion++;
        continue;
      }
      // From when the cancel left the load generator: over HTTP/2 it waits for
      // the client's loop (RST_STREAM is written in its check phase), and a
      // load generator busy with 50 streams is no real client. That wait is
      // reported beside it, as the client's own.
      close.push(rec.clientClosedAt - a.sentAt);
      send.push(a.sentAt - a.abortAt);
      after.push(Math.max(0, rec.tokensWritten - a.received));
    }
    out[kind] = { closeMs: summary(close), clientSendMs: summary(send), tokensAfterAbort: summary(after), notClosed, ranToCompletion };
    log(
      `cancel ${kind}: close p50 ${round(out[kind]!.closeMs.p50)} p99 ${round(out[kind]!.closeMs.p99)} ms (client's own send p50 ${round(out[kind]!.clientSendMs.p50)} p99 ${round(out[kind]!.clientSendMs.p99)}), upstream not closed ${notClosed}`,
    );
  }
  return { total, results: out };
}

// 5. Slow consumer ------------------------------------------------------------
async function slowScenario(s: Services) {
  const { streams, durationMs } = SIZE.slow;
  const tokenChars = 4000;
  const tokens = 2000;
  const out: Record<
    string,
    {
      rssGrowthKiBPerStream?: number;
      liveHeapKiBPerStream?: number;
      lateLiveHeapKiBPerStream?: number;
      upstreamWrittenKiBPerStream: number;
      aheadOfClientKiBPerStream: number;
      potentialKiBPerStream: number;
    }
  > = {};
  for (const kind of ["direct", "sluice-grpc", "sluice-sse"] as const) {
    await simIdle(s);
    await simReset(s);
    const before = s.gateway.rssBytes();
    const idleHeap = (await runtime(s, { gc: true })).heapUsedBytes;
    const samples: number[] = [];
    const live: number[] = [];
    const liveAt = [durationMs / 2, durationMs - 500];
    const t0 = performance.now();
    const run = load<{ delivered: Record<string, number> }>({
      scenario: "slow",
      target: targetSpec(s, kind),
      streams,
      readIntervalMs: 50,
      durationMs,
      prompt: `#sim tokens=${tokens} token_chars=${tokenChars}`,
    });
    let done = false;
    void run.finally(() => (done = true));
    while (!done) {
      await new Promise((r) => setTimeout(r, 200)); // monitor sampling
      samples.push(s.gateway.rssBytes());
      if (kind !== "direct" && live.length < liveAt.length && performance.now() - t0 >= liveAt[live.length]!) {
        live.push((await runtime(s, { gc: true })).heapUsedBytes - idleHeap);
      }
    }
    const r = await run;
    const records = (await simRecords(s)).filter((x) => x.tag?.startsWith("slow-"));
    const written = records.reduce((a, x) => a + x.bytesWritten, 0) / records.length;
    const delivered = Object.values(r.delivered).reduce((a, b) => a + b, 0) / streams;
    out[kind] = {
      ...(kind === "direct"
        ? {}
        : {
            rssGrowthKiBPerStream: (Math.max(...samples) - before) / KiB / streams,
            liveHeapKiBPerStream: (live.at(-1) ?? Number.NaN) / KiB / streams,
            lateLiveHeapKiBPerStream: ((live[1] ?? Number.NaN) - (live[0] ?? Number.NaN)) / KiB / streams,
          }),
      upstreamWrittenKiBPerStream: written / KiB,
      aheadOfClientKiBPerStream: (written - delivered) / KiB,
      potentialKiBPerStream: (tokens * tokenChars) / KiB,
    };
    log(`slow ${kind}: upstream wrote ${round(written / KiB)} KiB/stream of ${(tokens * tokenChars) / KiB}`);
  }
  return { streams, durationMs, results: out };
}

// 8. Telemetry cost ---------------------------------------------------------------
/**
 * A gateway of its own for one side of a comparison, or for a scenario that
 * needs a fresh process, on the same simulator; `config` adds sections
 * (`telemetry`, `server`) to the plain one.
 */
async function startGateway(
  s: Services,
  config: Record<string, unknown>,
  options: { exposeGc?: boolean; models?: Record<string, unknown>; provider?: Record<string, unknown>; readyEvent?: string; timeoutMs?: number } = {},
): Promise<{ proc: Proc; url: string }> {
  const dir = await mkdtemp(join(tmpdir(), "sluice-bench-"));
  const configFile = join(dir, "sluice.yaml");
  let url: string | undefined;
  let readySeen = false;
  await writeFile(
    configFile,
    stringify({ log: { level: "info" }, ...config, providers: { sim: { kind: "openai", baseUrl: s.simOpenAi, timeouts: BENCH_TIMEOUTS, ...options.provider } }, models: options.models ?? { bench: { provider: "sim", model: "sim-1" } } }),
  );
  const { proc, value } = await startUntil(
    process.execPath,
    [...GATEWAY_NODE_FLAGS, ...(options.exposeGc ? ["--expose-gc"] : []), "dist/src/main.js", "--config", configFile, "--port", "0"],
    // With `readyEvent` (`db.ready`, say), the gateway is ready once it listens and that line came, in either order.
    (line) => {
      if (line.includes('"server.listening"')) url = (JSON.parse(line) as { url: string }).url;
      if (options.readyEvent !== undefined && line.includes(`"event":"${options.readyEvent}"`)) readySeen = true;
      return url !== undefined && (options.readyEvent === undefined || readySeen) ? url : undefined;
    },
    options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs },
  );
  return { proc, url: value };
}

/** An OTLP/HTTP receiver that accepts and drops every export: the cost measured is the gateway's, not a collector's. */
async function startSink(): Promise<{ url: string; exports: () => number; close(): void }> {
  let exports = 0;
  const server = createHttpServer((req, res) => {
    req.resume();
    req.on("end", () => {
      exports++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, exports: () => exports, close: () => server.close() };
}

async function telemetryScenario(s: Services) {
  const sink = await startSink();
  const off = await startGateway(s, { telemetry: { metrics: { enabled: false } } });
  const on = await startGateway(s, { telemetry: { metrics: { enabled: true }, tracing: { exporter: "otlp", endpoint: `${sink.url}/v1/traces` } } });
  const { tokens, streams, rounds } = SIZE.telemetry;
  // Every stream is the simulator's seed-1 text of `tokens` deltas.
  const charsPerDelta = simulatedText(1, tokens).length / tokens;
  const runs: Record<"off" | "on", Array<{ ttftP50: number; gatewayCpuSPer100k: number; deltasPerS: number }>> = { off: [], on: [] };
  try {
    // Alternate off and on, several rounds, and keep each one's median: machine noise then hits both alike.
    for (let round = 0; round < rounds; round++) {
      for (const [name, gw] of [["off", off], ["on", on]] as const) {
        const target = { kind: "sluice-grpc" as const, url: gw.url, model: "bench" };
        await load({ scenario: "ttft", target, concurrency: 1, perLane: 20, prompt: "#sim tokens=2" }); // warm-up
        const ttft = await load<{ samples: number[] }>({ scenario: "ttft", target, concurrency: 1, perLane: streams, prompt: "#sim tokens=2" });
        const before = gw.proc.cpuSeconds();
        const tp = await load<{ chars: number; wallMs: number }>({ scenario: "throughput", target, concurrency: 10, prompt: `#sim tokens=${tokens}` });
        // Upstream deltas, counted by text: the gRPC edge joins deltas that arrive together into one message.
        const deltas = tp.chars / charsPerDelta;
        runs[name].push({
          ttftP50: summary(ttft.samples).p50,
          gatewayCpuSPer100k: ((gw.proc.cpuSeconds() - before) / Math.max(1, deltas)) * 100_000,
          deltasPerS: deltas / (tp.wallMs / 1000),
        });
        await simReset(s);
      }
    }
    const median = (xs: number[]) => summary(xs).p50;
    const pick = (name: "off" | "on") => ({
      ttftP50: median(runs[name].map((r) => r.ttftP50)),
      gatewayCpuSPer100k: median(runs[name].map((r) => r.gatewayCpuSPer100k)),
      deltasPerS: median(runs[name].map((r) => r.deltasPerS)),
    });
    const out = { off: pick("off"), on: pick("on") };
    // Scrape once: the exposition itself must work on the instrumented gateway.
    const scraped = (await (await fetch(`${on.url}/metrics`)).text()).includes("gen_ai_server_time_to_first_token_bucket");
    await on.proc.stop(); // flushes its spans to the sink
    const result = {
      off: out.off,
      on: out.on,
      cpuRatio: out.on.gatewayCpuSPer100k / out.off.gatewayCpuSPer100k,
      ttftAddedMs: out.on.ttftP50 - out.off.ttftP50,
      rounds,
      spanExports: sink.exports(),
      scraped,
    };
    log(`telemetry: gateway CPU per 100k deltas ${round(out.off.gatewayCpuSPer100k)} → ${round(out.on.gatewayCpuSPer100k)} s, TTFT p50 ${round(out.off.ttftP50)} → ${round(out.on.ttftP50)} ms`);
    return result;
  } finally {
    await Promise.all([off.proc.stop(), on.proc.stop()]);
    sink.close();
  }
}

// Response cache (issue #26) --------------------------------------------------
/** The provider's time to first token in the cache scenario: a hit must beat a provider that thinks, not a zero-delay one. */
const CACHE_UPSTREAM_TTFT_MS = 20;

/** A path of a rounds-interleaved TTFT measurement: where it goes, and whether every question is new. */
type RoundPath = { readonly target: TargetSpec; readonly unique: boolean };

/**
 * Each path's TTFT samples and errors, the paths interleaved in `rounds`
 * and pooled: machine noise hits every path alike. Every run's load
 * generator first sends five untimed bursts on the same connections: the
 * client's cold code and the gateway's first bursts of this size are not
 * the path's cost.
 */
async function pooledRounds<K extends string>(paths: Record<K, RoundPath>, rounds: number, run: { concurrency: number; perLane: number; prompt: string }) {
  const samples = {} as Record<K, number[]>;
  const errors = {} as Record<K, number>;
  for (let round = 0; round < rounds; round++) {
    for (const [name, path] of Object.entries(paths) as Array<[K, RoundPath]>) {
      const r = await load<{ samples: number[]; errors: number }>({ scenario: "ttft", target: path.target, ...run, unique: path.unique, warmUpRounds: 5 });
      (samples[name] ??= []).push(...r.samples);
      errors[name] = (errors[name] ?? 0) + r.errors;
    }
  }
  return { samples, errors };
}

async function cacheScenario(s: Services) {
  const model = `sim-1?tokens=8&ttft_ms=${CACHE_UPSTREAM_TTFT_MS}`;
  const gw = await startGateway(s, {}, {
    models: { off: { provider: "sim", model }, exact: { provider: "sim", model, cache: { exact: { ttlS: 3_600 } } } },
  });
  const levels = SIZE.ttft.levels.filter((c) => c <= 100);
  const streams = SIZE.ttft.streams / 4;
  const paths = {
    direct: { target: { kind: "direct" as const, url: s.simOpenAi, model }, unique: true },
    off: { target: { kind: "sluice-grpc" as const, url: gw.url, model: "off" }, unique: true },
    miss: { target: { kind: "sluice-grpc" as const, url: gw.url, model: "exact" }, unique: true },
    hit: { target: { kind: "sluice-grpc" as const, url: gw.url, model: "exact" }, unique: false },
  };
  const results: Record<string, Record<number, { p50: number; p99: number; errors: number }>> = {};
  const prompt = "What does the cache keep?";
  try {
    // Warm both gateways' paths, and store the hit path's one entry.
    for (const path of Object.values(paths)) await load({ scenario: "ttft", target: path.target, concurrency: 1, perLane: 20, prompt, unique: path.unique });
    // Off and miss differ by less than this machine's noise: hence rounds, pooled.
    const rounds = 3;
    for (const concurrency of levels) {
      const { samples, errors } = await pooledRounds(paths, rounds, { concurrency, perLane: Math.max(1, Math.ceil(streams / concurrency / rounds)), prompt });
      for (const name of Object.keys(paths) as Array<keyof typeof paths>) {
        (results[name] ??= {})[concurrency] = { ...summary(samples[name]!), errors: errors[name]! };
        log(`cache c=${concurrency} ${name}: TTFT p50 ${round(results[name]![concurrency]!.p50)} ms p99 ${round(results[name]![concurrency]!.p99)} ms (${samples[name]!.length} streams, ${errors[name]} errors)`);
      }
      await simReset(s);
    }
  } finally {
    await gw.proc.stop();
  }
  const at = (name: string, c: number) => results[name]![c]!.p50;
  return {
    upstreamTtftMs: CACHE_UPSTREAM_TTFT_MS,
    levels,
    results,
    hitRatio: Object.fromEntries(levels.map((c) => [c, at("hit", c) / at("direct", c)])),
    missAddedMs: at("miss", levels[0]!) - at("off", levels[0]!),
    semanticMiss: await semanticMisses(s, model, streams),
  };
}

/** Starting the embedded PGlite takes seconds on this machine (TOOLCHAIN: 5–16 s); the gateway is timed once it is ready. */
const DB_READY_TIMEOUT_MS = 90_000;

/**
 * What a semantic-cache miss adds, one stream at a time: TTFT through an
 * alias with a semantic cache (threshold 0.99, every question new, so each
 * one is embedded, looked up in the embedded PGlite and stored after it
 * completed) against an alias without a cache on the same gateway, and the
 * embedding call itself (the simulator's `/embeddings`, straight), timed in
 * the same rounds. The issue's bound is the embedding call + 1 ms.
 */
async function semanticMissScenario(s: Services, model: string, streams: number, mode: "pglite" | "url", store: Record<string, unknown>) {
  const gw = await startGateway(
    s,
    { cache: { lookupTimeoutMs: 1_000 }, store },
    {
      models: {
        off: { provider: "sim", model },
        emb: { provider: "sim", model: "sim-embed" },
        semantic: { provider: "sim", model, cache: { semantic: { embeddingModel: "emb", threshold: 0.99 } } },
      },
      readyEvent: "db.ready",
      timeoutMs: DB_READY_TIMEOUT_MS,
    },
  );
  const paths = {
    embed: { target: { kind: "direct-embed" as const, url: s.simOpenAi, model: "sim-embed" }, unique: true },
    off: { target: { kind: "sluice-grpc" as const, url: gw.url, model: "off" }, unique: true },
    semanticMiss: { target: { kind: "sluice-grpc" as const, url: gw.url, model: "semantic" }, unique: true },
  };
  const prompt = "Which regions does the service run in?";
  const rounds = 3;
  let pooled: Awaited<ReturnType<typeof pooledRounds<keyof typeof paths>>>;
  try {
    for (const path of Object.values(paths)) await load({ scenario: "ttft", target: path.target, concurrency: 1, perLane: 20, prompt, unique: true });
    pooled = await pooledRounds(paths, rounds, { concurrency: 1, perLane: Math.ceil(streams / rounds), prompt });
  } finally {
    await gw.proc.stop();
  }
  const { samples, errors } = pooled;
  const results = Object.fromEntries(Object.keys(paths).map((name) => [name, { ...summary(samples[name as keyof typeof paths]), errors: errors[name as keyof typeof paths] }])) as Record<
    keyof typeof paths,
    ReturnType<typeof summary> & { errors: number }
  >;
  for (const [name, r] of Object.entries(results)) log(`cache semantic (${mode}) c=1 ${name}: p50 ${round(r.p50)} ms p99 ${round(r.p99)} ms (${r.n} calls, ${r.errors} errors)`);
  return { results, embedCallMs: results.embed.p50, addedMs: results.semanticMiss.p50 - results.off.p50 };
}

/** The semantic miss on both stores: PGlite in the gateway's process (its work on the gateway's thread) and a server by URL. */
async function semanticMisses(s: Services, model: string, streams: number) {
  const pglite = await semanticMissScenario(s, model, streams, "pglite", {});
  const server = await servePgliteOverWire();
  try {
    return { pglite, url: await semanticMissScenario(s, model, streams, "url", { postgres: { url: server.url, poolSize: 2 } }) };
  } finally {
    await server.close();
  }
}

/** The semantic cache's lookups at the mode's entry count, and the evaluation set's hit and false-hit rates. */
function semanticRun(s: Services): Promise<SemanticResult> {
  return semanticScenario(s.simOpenAi, SEMANTIC_ENTRIES[MODE], SEMANTIC_LOOKUPS[MODE], log);
}

/** Timed lookups per store: p99 is then the 10th-slowest of 1,000, not the 2nd of 200, which one pause of the process decided. */
const SEMANTIC_LOOKUPS: Record<Mode, number> = { full: 1_000, quick: 200 };

/** Entries stored before the semantic lookups are timed (issue #26 asks for 100,000). */
const SEMANTIC_ENTRIES: Record<Mode, number> = { full: 100_000, quick: 5_000 };

// 6. Failover ------------------------------------------------------------------
type ResilienceRun = { results: Array<{ ttftMs?: number; provider?: string; error?: string }> };

async function resilienceRun(s: Services, model: string, requests: number): Promise<ResilienceRun> {
  return load<ResilienceRun>({ scenario: "resilience", target: { kind: "sluice-grpc", url: s.gatewayUrl, model }, requests, concurrency: 10, prompt: "hi" });
}

const scriptCount = (records: RequestRecord[], script: string) => records.filter((r) => r.model.endsWith(`script=${script}`)).length;

async function failoverScenario(s: Services) {
  const { requests } = SIZE.failover;
  await simReset(s);
  const alone = await resilienceRun(s, "primary-only", requests);
  const both = await resilienceRun(s, "failover", requests);
  const records = await simRecords(s);
  const ttft = (run: ResilienceRun, provider: string) => summary(run.results.filter((r) => r.provider === provider && r.ttftMs !== undefined).map((r) => r.ttftMs!));
  const result = {
    requests,
    errorRateWithoutFailover: alone.results.filter((r) => r.error).length / requests,
    errorRate: both.results.filter((r) => r.error).length / requests,
    failedOver: both.results.filter((r) => r.provider === "backup").length,
    primaryFailures: records.filter((r) => r.model.endsWith("script=fo") && r.outcome === "failed").length,
    servedByPrimary: ttft(both, "primary"),
    failedOverTtft: ttft(both, "backup"),
  };
  log(`failover: error rate ${result.errorRate} (without failover ${result.errorRateWithoutFailover}), ${result.failedOver} failed over, TTFT p50 ${round(result.servedByPrimary.p50)} → ${round(result.failedOverTtft.p50)} ms`);
  return result;
}

// 7. Hedged first token -------------------------------------------------------
async function hedgeScenario(s: Services) {
  const { requests } = SIZE.hedge;
  await simReset(s);
  const plain = await resilienceRun(s, "heavy-tail", requests);
  const hedged = await resilienceRun(s, "hedged", requests);
  const records = await simRecords(s);
  const ttft = (run: ResilienceRun) => summary(run.results.filter((r) => r.ttftMs !== undefined).map((r) => r.ttftMs!));
  const upstream = (primary: string, backup: string) => scriptCount(records, primary) + scriptCount(records, backup);
  const result = {
    requests,
    afterMs: HEDGE_AFTER_MS,
    withoutHedge: ttft(plain),
    withHedge: ttft(hedged),
    upstreamWithout: upstream("tail", "tail-backup"),
    upstreamWith: upstream("hedge", "hedge-backup"),
    errors: plain.results.filter((r) => r.error).length + hedged.results.filter((r) => r.error).length,
  };
  log(`hedge: TTFT p99 ${round(result.withoutHedge.p99)} → ${round(result.withHedge.p99)} ms, upstream requests ${result.upstreamWithout} → ${result.upstreamWith}`);
  return result;
}

// Ledger on vs off --------------------------------------------------------------
/**
 * What writing the spend ledger costs the gateway per call: three gateways
 * on the same Redis (own prefixes) and the same virtual key, one without
 * the ledger, one with it on the embedded database (PGlite in the gateway's
 * own process: the default, and the worst case for the gateway's CPU), one
 * on a PostgreSQL server by URL (PGlite behind pglite-socket in this
 * process, so the database's CPU is not the gateway's, as in production).
 * Same calls, alternated per round; gateway CPU seconds per 1,000 calls.
 */
async function ledgerScenario(s: Services) {
  const { PGlite } = await import("@electric-sql/pglite");
  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
  const { vector } = await import("@electric-sql/pglite-pgvector");
  const { createHash } = await import("node:crypto");
  const db = await PGlite.create({ extensions: { vector } });
  const port = await freePort();
  const server = new PGLiteSocketServer({ db, port, host: "127.0.0.1", maxConnections: 8 });
  await server.start();
  const keyed = (name: string, extra: Record<string, unknown>) => ({
    auth: { keys: [{ name: "bench", sha256: createHash("sha256").update(BENCH_KEY).digest("hex"), limits: BENCH_LIMITS, budget: BENCH_BUDGET }] },
    store: { redis: { url: `redis://127.0.0.1:${s.redisPort}`, prefix: `sluice-bench-ledger-${name}:${process.pid}:`, failMode: "closed", timeoutMs: 2_000 }, ...extra },
  });
  const sides = {
    off: await startGateway(s, { ...keyed("off", {}), ledger: { enabled: false } }),
    embedded: await startGateway(s, keyed("embedded", { postgres: {} })),
    server: await startGateway(s, keyed("server", { postgres: { url: `postgres://postgres@127.0.0.1:${port}/postgres`, poolSize: 4 } })),
  };
  const { calls, rounds } = SIZE.ledger;
  const runs: Record<keyof typeof sides, number[]> = { off: [], embedded: [], server: [] };
  try {
    for (const [name, gw] of Object.entries(sides)) {
      // Warm-up, which also opens each database (the embedded one takes seconds) before anything is measured.
      await load({ scenario: "ttft", target: { kind: "sluice-grpc", url: gw.url, model: "bench", apiKey: BENCH_KEY }, concurrency: 10, perLane: LEDGER_WARM_UP / 10, prompt: "#sim tokens=2" });
      if (name !== "off") await waitForLedgerRows(gw.url, LEDGER_WARM_UP);
    }
    // Off and server alternate; the embedded side runs its rounds after them, since its database works on in the
    // background and would share the cores with whichever side ran next.
    const plan = [...Array.from({ length: rounds }, (_, r) => (r % 2 === 0 ? (["off", "server"] as const) : (["server", "off"] as const))).flat(), ...Array.from({ length: rounds }, () => "embedded" as const)];
    const done: Record<keyof typeof sides, number> = { off: 0, embedded: 0, server: 0 };
    for (const name of plan) {
      const gw = sides[name];
      const before = gw.proc.cpuSeconds();
      await load({ scenario: "ttft", target: { kind: "sluice-grpc", url: gw.url, model: "bench", apiKey: BENCH_KEY }, concurrency: 10, perLane: Math.ceil(calls / 10), prompt: "#sim tokens=2" });
      const loaded = performance.now();
      done[name]++;
      // The ledger writes after the calls (every ledger.flushMs): its CPU counts once what it wrote is in. The
      // server's rows are counted in the database (nothing asked of the gateway); the embedded one's only the
      // gateway can tell, through /metrics, read once a second so that scraping costs it little.
      const expected = LEDGER_WARM_UP + done[name] * Math.ceil(calls / 10) * 10;
      if (name === "server") await waitForRows(async () => Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM sluice_ledger")).rows[0]!.n), expected);
      if (name === "embedded") await waitForLedgerRows(gw.url, expected, 1_000);
      // Every side idles as long after its calls (at least two flush intervals), so idle work is in all of them alike.
      const idle = LEDGER_SETTLE_MS - (performance.now() - loaded);
      if (idle > 0) await new Promise((resolve) => setTimeout(resolve, idle));
      runs[name].push(((gw.proc.cpuSeconds() - before) / calls) * 1_000);
      await simReset(s);
    }
    const median = (xs: number[]) => summary(xs).p50;
    const off = median(runs.off);
    const result = {
      cpuSPer1kCalls: { off, embedded: median(runs.embedded), server: median(runs.server) },
      embeddedRatio: median(runs.embedded) / off,
      serverRatio: median(runs.server) / off,
      serverRows: Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM sluice_ledger")).rows[0]!.n),
      runs,
      calls,
      rounds,
    };
    log(`ledger: gateway CPU per 1,000 calls off ${round(off * 1000)} ms, embedded ${round(result.cpuSPer1kCalls.embedded * 1000)} ms (×${round(result.embeddedRatio)}), server ${round(result.cpuSPer1kCalls.server * 1000)} ms (×${round(result.serverRatio)})`);
    return result;
  } finally {
    await Promise.all(Object.values(sides).map((g) => g.proc.stop()));
    await server.stop();
    await db.close();
  }
}

/** Calls each side of the ledger comparison makes before anything is measured (the JIT's warm-up, the database's opening). */
const LEDGER_WARM_UP = 1_000;

/** How long after its calls each side of the ledger comparison is measured: two flush intervals and some. */
const LEDGER_SETTLE_MS = 1_500;

/** Waits until `count()` reaches `rows`, asking every `everyMs`. */
async function waitForRows(count: () => Promise<number>, rows: number, everyMs = 100, timeoutMs = 120_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const n = await count();
    if (n >= rows) return;
    if (performance.now() > deadline) throw new Error(`ledger: ${n} rows written, ${rows} expected`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Waits until a gateway's ledger has written `rows` rows, read from its /metrics (sluice_ledger_rows_total, result written). */
function waitForLedgerRows(url: string, rows: number, everyMs = 100): Promise<void> {
  return waitForRows(async () => {
    const text = await (await fetch(`${url}/metrics`)).text();
    return Number(/^sluice_ledger_rows_total\{[^}]*sluice_ledger_result="written"[^}]*\} (\d+)/m.exec(text)?.[1] ?? 0);
  }, rows, everyMs);
}

// 9. Admission with Redis limits -------------------------------------------------
/** TTFT per lane ("gRPC, Redis limits", …) and concurrency. */
type AdmissionLanes = Record<string, Record<number, ReturnType<typeof summary>>>;
/** Per edge and concurrency, what the limits add to TTFT p50: limited − plain (ms) and limited ÷ plain. */
type AdmissionAdded = Record<number, { addedMs: number; ratio: number }>;
/** The lanes' figures under their labels, the edges' added TTFT under `grpc` and `sse`, and what three levels add over the key alone under `hierarchy`. */
type AdmissionResults = { readonly grpc: AdmissionAdded; readonly sse: AdmissionAdded; readonly hierarchy: { readonly grpc: AdmissionAdded; readonly sse: AdmissionAdded } } & { readonly [lane: string]: Record<number, ReturnType<typeof summary>> | AdmissionAdded };
const admissionLane = (r: { results: AdmissionResults }, label: string) => r.results[label] as Record<number, ReturnType<typeof summary>>;
/** Calls per command name since the Redis started (INFO commandstats). */
function redisCommandCalls(port: number): Record<string, number> {
  const text = execFileSync("redis-cli", ["-h", "127.0.0.1", "-p", String(port), "info", "commandstats"], { encoding: "utf8" });
  const calls: Record<string, number> = {};
  for (const match of text.matchAll(/^cmdstat_([\w|]+):calls=(\d+)/gm)) calls[match[1]!] = Number(match[2]);
  return calls;
}

async function admissionScenario(s: Services) {
  const levels = [1, 100];
  const { streamsPerLevel, rounds } = SIZE.admission;
  const prompt = "#sim tokens=2";
  const lanes = [
    { label: "gRPC, no limits", spec: targetSpec(s, "sluice-grpc") },
    { label: "gRPC, Redis limits", spec: { kind: "sluice-grpc" as const, url: s.limitedUrl, model: "bench", apiKey: BENCH_KEY } },
    { label: "SSE, no limits", spec: targetSpec(s, "sluice-sse") },
    { label: "SSE, Redis limits", spec: { kind: "sluice-sse" as const, url: `${s.limitedUrl}/v1`, model: "bench", apiKey: BENCH_KEY } },
    { label: "gRPC, Redis limits, 3 levels", spec: { kind: "sluice-grpc" as const, url: s.limitedUrl, model: "bench", apiKey: BENCH_TEAM_KEY } },
    { label: "SSE, Redis limits, 3 levels", spec: { kind: "sluice-sse" as const, url: `${s.limitedUrl}/v1`, model: "bench", apiKey: BENCH_TEAM_KEY } },
  ];
  const limitedLanes = lanes.filter((l) => l.label.includes("Redis")).length;
  const samples: Record<string, Record<number, number[]>> = {};
  const errors: Record<string, number> = {};
  let limitedStreams = 0;
  for (const lane of lanes) await load({ scenario: "ttft", target: lane.spec, concurrency: 20, perLane: 2, prompt }); // warm-up
  limitedStreams += limitedLanes * 20 * 2;
  const before = redisCommandCalls(s.redisPort);
  for (const concurrency of levels) {
    const perLane = Math.max(1, Math.ceil(streamsPerLevel / rounds / concurrency));
    for (let round = 0; round < rounds; round++) {
      // Alternate the order per round, so drift on a shared machine hits both sides alike.
      for (const lane of round % 2 === 0 ? lanes : [...lanes].reverse()) {
        const r = await load<{ samples: number[]; errors: number }>({ scenario: "ttft", target: lane.spec, concurrency, perLane, prompt });
        ((samples[lane.label] ??= {})[concurrency] ??= []).push(...r.samples);
        errors[lane.label] = (errors[lane.label] ?? 0) + r.errors;
        if (lane.label.includes("Redis")) limitedStreams += r.samples.length + r.errors;
      }
    }
    await simReset(s);
  }
  const after = redisCommandCalls(s.redisPort);
  const measuredLimited = limitedStreams - limitedLanes * 20 * 2;
  const delta = (name: string) => (after[name] ?? 0) - (before[name] ?? 0);
  const scripts = delta("evalsha") + delta("eval");
  // INFO commandstats also counts the commands a script runs inside Redis: those are not round trips.
  const polls = delta("get") + delta("hvals");
  const inside = Object.keys(after).reduce((sum, name) => sum + delta(name), 0) - scripts - polls;
  const lanesOut = Object.fromEntries(
    Object.entries(samples).map(([label, byLevel]) => [label, Object.fromEntries(Object.entries(byLevel).map(([c, v]) => [c, summary(v)]))]),
  ) as AdmissionLanes;
  // Beside each lane's TTFT, per edge and level: what the limits add (limited − plain p50) and their ratio.
  const edge = (name: string, base = "no limits", over = "Redis limits") =>
    Object.fromEntries(
      levels.map((c) => {
        const plain = lanesOut[`${name}, ${base}`]![c]!.p50;
        const limited = lanesOut[`${name}, ${over}`]![c]!.p50;
        return [c, { addedMs: limited - plain, ratio: limited / plain }];
      }),
    );
  const hierarchy = { grpc: edge("gRPC", "Redis limits", "Redis limits, 3 levels"), sse: edge("SSE", "Redis limits", "Redis limits, 3 levels") };
  const result = {
    levels,
    results: { ...lanesOut, grpc: edge("gRPC"), sse: edge("SSE"), hierarchy } as AdmissionResults,
    errors,
    limitedStreams: measuredLimited,
    scriptCallsPerStream: scripts / measuredLimited,
    commandsInsideScriptsPerStream: inside / measuredLimited,
    keyListPolls: polls,
    ownRedis: s.redis !== undefined,
  };
  for (const c of levels) {
    for (const name of ["gRPC", "SSE"]) {
      const plain = lanesOut[`${name}, no limits`]![c]!.p50;
      const limited = lanesOut[`${name}, Redis limits`]![c]!.p50;
      log(`admission c=${c} ${name}: TTFT p50 ${round(plain)} → ${round(limited)} ms (+${round(limited - plain)} ms, ×${round(limited / plain)})`);
      const three = lanesOut[`${name}, Redis limits, 3 levels`]![c]!.p50;
      log(`admission c=${c} ${name}: key, team and business line ${round(three)} ms (+${round(three - limited)} ms over the key alone)`);
    }
  }
  log(`admission: ${round(result.scriptCallsPerStream)} script calls per limited stream (admission + settle), ${round(result.commandsInsideScriptsPerStream)} commands inside them`);
  return result;
}

function admissionSection(r: Awaited<ReturnType<typeof admissionScenario>>): string {
  const rows = r.levels.flatMap((c) =>
    ["gRPC", "SSE"].map((edge) => {
      const plain = admissionLane(r, `${edge}, no limits`)[c]!;
      const limited = admissionLane(r, `${edge}, Redis limits`)[c]!;
      const three = admissionLane(r, `${edge}, Redis limits, 3 levels`)[c]!;
      return [
        String(c),
        edge,
        plain.p50,
        limited.p50,
        round(limited.p50 - plain.p50),
        round(limited.p50 / plain.p50),
        three.p50,
        round(three.p50 - limited.p50),
        `${plain.n} / ${limited.n} / ${three.n}`,
        `${r.errors[`${edge}, no limits`] ?? 0} / ${r.errors[`${edge}, Redis limits`] ?? 0} / ${r.errors[`${edge}, Redis limits, 3 levels`] ?? 0}`,
      ];
    }),
  );
  return [
    `## 9. Admission with Redis limits (a virtual key with every limit and a budget, one Redis script per admission; same run, same simulator)`,
    table(
      ["concurrent streams", "edge", "TTFT p50 no limits ms", "TTFT p50 Redis limits ms", "added ms", "ratio", "TTFT p50 key + team + business line ms", "added over the key alone ms", "streams (no limits / key / 3 levels)", "errors"],
      rows,
    ),
    "",
    `Redis round trips per limited stream: ${round(r.scriptCallsPerStream)} script calls (one admission before the first attempt, one settle after the last delta), running ${round(r.commandsInsideScriptsPerStream)} commands inside Redis between them; besides, ${r.keyListPolls} reads of the key list's version (a poll every 250 ms, not per request)${r.ownRedis ? "" : "; shared Redis: counts include other clients"}.`,
    "",
  ].join("\n");
}

function machine() {
  const cpu = cpus();
  return { cpus: cpu.length, model: cpu[0]?.model ?? "unknown", node: process.version, date: new Date().toISOString() };
}

/** PII redaction (issue #28): screening in this process, and restoring's gateway CPU per delta on a gateway of its own. */
function piiRun(s: Services): Promise<PiiResult> {
  return piiScenario(SIZE.pii, {
    startGateway: (models) => startGateway(s, {}, { models }),
    load,
    simReset: () => simReset(s),
    upstreamDeltas: async () => (await simRecords(s)).reduce((n, r) => n + r.tokensWritten, 0),
    log,
  });
}

/** Routing by need (issue #29): TTFT through an alias with capabilities vs one without, on a gateway of its own; token counting in this process. */
function needsRun(s: Services): Promise<NeedsResult> {
  return needsScenario(SIZE.needs, {
    startGateway: (models) => startGateway(s, {}, { models }),
    load,
    simReset: () => simReset(s),
    log,
  });
}

/** Batches beside interactive traffic (issue #30): interactive TTFT with and without a batch running, on a gateway of its own. */
function batchRun(s: Services): Promise<BatchResult> {
  return batchScenario(SIZE.batch, {
    startGateway: (config, provider) => startGateway(s, config, { provider }),
    load,
    simReset: () => simReset(s),
    log,
  });
}

/** Coding agents' request sizes and marks (issue #44), on a gateway of its own on the simulator's Anthropic wire. */
async function agentsRun(s: Services) {
  const result = await agentScenario(SIZE.agents, { startGateway: (models, provider) => startGateway(s, {}, { models, provider }), simOrigin: s.simOrigin, log });
  log(agentSection(result));
  return result;
}

/** Resumable streams on vs off, on the gateway with a Redis store (the limited one). */
function runResume(s: Services) {
  return resumeScenario(s.limitedUrl, BENCH_KEY, SIZE.resume, log, { gateway: () => s.limited.cpuSeconds(), ...(s.redis ? { redis: () => s.redis!.cpuSeconds() } : {}) });
}

async function main(): Promise<void> {
  const started = performance.now();
  await mkdir(RESULTS, { recursive: true });
  if (args.render !== undefined) {
    const { goals: _goals, ...measured } = JSON.parse(await readFile(args.render, "utf8")) as Result & { goals?: unknown };
    await writeReport(measured);
    return;
  }
  const s = await startServices();
  log(`simulator ${s.simOrigin}, gateway ${s.gatewayUrl}${s.peerUrl ? `, peer ${s.peerUrl}` : ""}, limited gateway ${s.limitedUrl}`);
  try {
    if (args.only === "admission") {
      const admission = await admissionScenario(s);
      const name = resultsName(MODE, "admission");
      const md = [`# Sluice benchmark: admission with Redis limits (${MODE})`, "", `Machine: ${JSON.stringify(machine())}`, "", admissionSection(admission)].join("\n");
      await writeFile(join(RESULTS, `${name}.json`), `${JSON.stringify({ machine: machine(), admission }, null, 2)}\n`);
      await writeFile(join(RESULTS, `${name}.md`), md);
      process.stdout.write(`${md}\n`);
      return;
    }
    if (args.only === "resume") {
      const resume = await runResume(s);
      const name = resultsName(MODE, "resume");
      const md = [`# Sluice benchmark: resumable streams (${MODE})`, "", `Machine: ${JSON.stringify(machine())}`, "", resumeSection(resume)].join("\n");
      await writeFile(join(RESULTS, `${name}.json`), `${JSON.stringify({ machine: machine(), resume, resumable: resumableSummary(resume) }, null, 2)}\n`);
      await writeFile(join(RESULTS, `${name}.md`), md);
      process.stdout.write(`${md}\n`);
      return;
    }
    const single: Record<string, (s: Services) => Promise<unknown>> = {
      ttft: ttftScenario,
      throughput: throughputScenario,
      capacity: capacityScenario,
      cancel: cancelScenario,
      slow: slowScenario,
      telemetry: telemetryScenario,
      cache: cacheScenario,
      semantic: semanticRun,
      ledger: ledgerScenario,
      pii: piiRun,
      needs: needsRun,
      batch: batchRun,
      agents: agentsRun,
    };
    const run = args.only === undefined ? undefined : single[args.only];
    if (run) {
      // For iteration: one scenario's raw figures (the log lines carry the per-path summary).
      const result = await run(s);
      await writeFile(join(RESULTS, `${resultsName(MODE, args.only)}.json`), `${JSON.stringify({ machine: machine(), [args.only!]: result }, null, 2)}\n`);
      process.stdout.write(`${JSON.stringify(result)}\n`);
      return;
    }
    if (args.only !== undefined) throw new Error(`unknown scenario for --only: ${args.only} (known: admission, resume, ${Object.keys(single).join(", ")})`);
    const ttft = await ttftScenario(s);
    const throughput = await throughputScenario(s);
    const cancel = await cancelScenario(s);
    const slow = await slowScenario(s);
    const failover = await failoverScenario(s);
    const hedge = await hedgeScenario(s);
    const telemetry = await telemetryScenario(s);
    const admission = await admissionScenario(s);
    const ledger = await ledgerScenario(s);
    const pii = await piiRun(s);
    const needs = await needsRun(s);
    const batch = await batchRun(s);
    const resume = await runResume(s);
    const cache = await cacheScenario(s);
    const semantic = await semanticRun(s);
    const capacity = await capacityScenario(s);
    const result = { mode: MODE, machine: machine(), ttft, throughput, capacity, cancel, slow, failover, hedge, telemetry, admission, ledger, pii, needs, batch, resume, resumable: resumableSummary(resume), cache, semantic, durationS: (performance.now() - started) / 1000 };
    await writeReport(result);
  } finally {
    await Promise.all([s.gateway.stop(), s.limited.stop(), s.sim.stop(), s.peer?.stop(), s.floor.stop()]);
    await s.redis?.stop();
  }
}

type Result = {
  mode: Mode;
  machine: ReturnType<typeof machine>;
  ttft: Awaited<ReturnType<typeof ttftScenario>>;
  throughput: Awaited<ReturnType<typeof throughputScenario>>;
  capacity: Awaited<ReturnType<typeof capacityScenario>>;
  cancel: Awaited<ReturnType<typeof cancelScenario>>;
  slow: Awaited<ReturnType<typeof slowScenario>>;
  failover: Awaited<ReturnType<typeof failoverScenario>>;
  hedge: Awaited<ReturnType<typeof hedgeScenario>>;
  telemetry: Awaited<ReturnType<typeof telemetryScenario>>;
  ledger: Awaited<ReturnType<typeof ledgerScenario>>;
  admission: Awaited<ReturnType<typeof admissionScenario>>;
  pii: PiiResult;
  needs: NeedsResult;
  batch: BatchResult;
  resume: Awaited<ReturnType<typeof resumeScenario>>;
  resumable: ReturnType<typeof resumableSummary>;
  cache: Awaited<ReturnType<typeof cacheScenario>>;
  semantic: SemanticResult;
  durationS: number;
};

async function writeReport(r: Result): Promise<void> {
  const kinds = Object.keys(r.ttft.results) as TargetKind[];
  const gateways = kinds.filter((k) => k !== "direct");
  const direct = r.ttft.results.direct!;
  const overhead = (k: TargetKind, c: number, p: "p50" | "p99") => r.ttft.results[k]![c]![p] - direct[c]![p];

  const ttftRows = r.ttft.levels.flatMap((c) =>
    kinds.map((k) => [String(c), NAMES[k], r.ttft.results[k]![c]!.p50, r.ttft.results[k]![c]!.p99, k === "direct" ? "—" : round(overhead(k, c, "p50")), k === "direct" ? "—" : round(overhead(k, c, "p99")), r.ttft.results[k]![c]!.errors]),
  );
  const tp = r.throughput.results;
  const tpRows = (Object.keys(tp) as TargetKind[]).map((k) => [NAMES[k], Math.round(tp[k]!.deltasPerS), k === "direct" ? "1.00" : round(tp[k]!.deltasPerS / tp.direct!.deltasPerS), tp[k]!.gatewayCpuSPer100k ?? "—", round(tp[k]!.clientCpuSPer100k), tp[k]!.allCpuSPer100k, k === "direct" ? "1.00" : round(tp[k]!.allCpuSPer100k / tp.direct!.allCpuSPer100k), round(tp[k]!.messages / tp[k]!.deltas, 3), tp[k]!.errors]);
  const cRows = (Object.keys(r.cancel.results) as TargetKind[]).map((k) => {
    const c = r.cancel.results[k]!;
    const closed = `${r.cancel.total - c.notClosed}/${r.cancel.total}`;
    const none = "never closed";
    return c.closeMs.n === 0
      ? [NAMES[k], none, none, "—", "—", "—", "—", `${closed}: upstream kept generating after the client left`]
      : [
          NAMES[k],
          c.closeMs.p50,
          c.closeMs.p99,
          k === "direct" ? "—" : round(c.closeMs.p99 - r.cancel.results.direct!.closeMs.p99),
          c.clientSendMs ? `${round(c.clientSendMs.p50)} / ${round(c.clientSendMs.p99)}` : "—",
          c.tokensAfterAbort.p50,
          c.tokensAfterAbort.p99,
          closed,
        ];
  });
  const sRows = (Object.keys(r.slow.results) as TargetKind[]).map((k) => {
    const x = r.slow.results[k]!;
    return [NAMES[k], x.liveHeapKiBPerStream ?? "—", x.lateLiveHeapKiBPerStream ?? "—", x.rssGrowthKiBPerStream ?? "—", x.upstreamWrittenKiBPerStream, x.aheadOfClientKiBPerStream, x.potentialKiBPerStream];
  });
  const hedgeExtra = r.hedge.upstreamWith / r.hedge.requests - 1;
  const goalList = goals({ ...r, capacityWindowS: SIZES[r.mode].capacity.plateauWindowMs / 1000 });
  const capRows = (["floor-sse", "sluice-grpc", "sluice-sse"] as const).map((k) => {
    const c = r.capacity.results[k];
    const added = c.interTokenAddedMs;
    return [NAMES[k], `${c.completed}/${c.streams}`, c.failed, c.idleRssMiB, c.peakRssMiB, c.kibPerStream, c.liveHeapKibPerStream, c.eventLoopDelayP99Ms, round(c.gatewayCpuUsPerToken), `${round(added.p50)} / ${round(added.p99)} / ${round(added.max)}`, c.wallS];
  });
  const md = [
    `# Sluice benchmark (${r.mode})`,
    "",
    `${r.machine.date} — ${r.machine.cpus} × ${r.machine.model}, Node ${r.machine.node}; gateway, simulator, peer, floor proxy and load generator as separate processes on 127.0.0.1; the gateways reach the simulator over HTTP/1.1. Ran ${round(r.durationS, 0)} s. Reproduce: \`npm run bench${r.mode === "quick" ? " -- --quick" : ""}\`.`,
    "",
    "## Goals",
    table(["goal", "target", "measured", "met"], goalList.map((g) => [g.name, g.target, g.measured, g.met ? "yes" : "**no**"])),
    "",
    "## 1. Time to first token (ms), overhead = gateway − direct at the same concurrency",
    table(["concurrency", "path", "p50", "p99", "overhead p50", "overhead p99", "errors"], ttftRows),
    "",
    `## 2. Throughput (${r.throughput.concurrency} streams × ${r.throughput.tokens} tokens, zero-delay upstream)`,
    table(["path", "deltas/s", "ratio vs direct", "gateway CPU s / 100k deltas", "load generator CPU s / 100k deltas", "all processes CPU s / 100k deltas", "CPU ratio vs direct", "text messages per delta", "errors"], tpRows),
    "",
    `## 3. Capacity (${r.capacity.streams} concurrent streams, 1 token/s; each path on a fresh process, warmed first)`,
    "Inter-token added: for every text message after a stream's first, the gap since the stream's previous one minus 1 s per upstream token it completes, as the client sees it; every gap of every stream, the same way on every path. Figures are the carrying process's: the gateway's, or the floor proxy's.",
    "",
    table(
      ["path", "completed", "failed", "idle RSS MiB", "peak RSS MiB", "RSS KiB per stream", "live JS heap KiB per stream (after GC)", `event-loop delay p99 ms (${SIZES[r.mode].capacity.plateauWindowMs / 1000} s at the plateau)`, "CPU µs per token", "inter-token added p50 / p99 / max ms", "wall s"],
      capRows,
    ),
    "",
    `## 4. Cancellation (${r.cancel.total} streams aborted after 1–10 deltas, upstream 100 tokens/s)`,
    "Measured from when the cancel left the load generator: undici closes the socket inside abort(); an HTTP/2 client writes RST_STREAM in its loop's check phase, which a load generator busy with 50 streams reaches late (its own wait, shown apart).",
    "",
    table(["path", "cancel sent→upstream close p50 ms", "p99 ms", "p99 vs direct ms", "load generator's own send wait p50 / p99 ms", "tokens after abort p50", "p99", "upstream closed"], cRows),
    "",
    `## 5. Slow consumer (${r.slow.streams} clients reading one 4 KB delta per 50 ms for ${r.slow.durationMs / 1000} s)`,
    table(
      ["path", "gateway live heap KiB/stream (after GC)", "change from mid-run to end", "gateway RSS growth KiB/stream", "upstream wrote KiB/stream", "upstream ahead of client KiB/stream", "upstream could have written KiB/stream"],
      sRows,
    ),
    "",
    `## 6. Failover (${r.failover.requests} requests, 10 at a time; the primary resets 30% of connections before headers, a healthy backup)`,
    table(
      ["client-visible errors", "without failover", "failed over", "TTFT p50 / p99 served by the primary ms", "TTFT p50 / p99 after a failover ms", "failover cost p50 / p99 ms"],
      [
        [
          `${round(r.failover.errorRate * 100)}%`,
          `${round(r.failover.errorRateWithoutFailover * 100)}%`,
          r.failover.failedOver,
          `${round(r.failover.servedByPrimary.p50)} / ${round(r.failover.servedByPrimary.p99)}`,
          `${round(r.failover.failedOverTtft.p50)} / ${round(r.failover.failedOverTtft.p99)}`,
          `${round(r.failover.failedOverTtft.p50 - r.failover.servedByPrimary.p50)} / ${round(r.failover.failedOverTtft.p99 - r.failover.servedByPrimary.p99)}`,
        ],
      ],
    ),
    "",
    `## 7. Hedged first token (${r.hedge.requests} requests, 10 at a time; 1 in 20 primary first tokens takes 2 s; hedge after ${r.hedge.afterMs} ms)`,
    table(
      ["", "TTFT p50 ms", "TTFT p99 ms", "upstream requests", "extra upstream requests"],
      [
        ["without hedging", r.hedge.withoutHedge.p50, r.hedge.withoutHedge.p99, r.hedge.upstreamWithout, "—"],
        ["with hedging", r.hedge.withHedge.p50, r.hedge.withHedge.p99, r.hedge.upstreamWith, `${round(hedgeExtra * 100)}%`],
      ],
    ),
    "",
    "## 8. Telemetry cost (two gateways of their own on the same simulator, gRPC edge)",
    table(
      ["", "TTFT p50, 1 stream ms", "deltas/s (10 streams)", "gateway CPU s / 100k deltas", "CPU ratio vs off"],
      [
        ["off (no metrics, no exporter)", r.telemetry.off.ttftP50, Math.round(r.telemetry.off.deltasPerS), r.telemetry.off.gatewayCpuSPer100k, "1.00"],
        [`on (metrics + OTLP export, ${r.telemetry.spanExports} exports received)`, r.telemetry.on.ttftP50, Math.round(r.telemetry.on.deltasPerS), r.telemetry.on.gatewayCpuSPer100k, round(r.telemetry.cpuRatio)],
      ],
    ),
    "",
    admissionSection(r.admission),
    "",
    `## 9b. Spend ledger on vs off (three gateways of their own, the same Redis and key; ${r.ledger.calls} calls per round, ${r.ledger.rounds} rounds, medians)`,
    table(
      ["", "gateway CPU ms / 1,000 calls", "ratio vs off"],
      [
        ["ledger off", round(r.ledger.cpuSPer1kCalls.off * 1000), "1.00"],
        ["ledger on, embedded PGlite (in the gateway's process)", round(r.ledger.cpuSPer1kCalls.embedded * 1000), round(r.ledger.embeddedRatio)],
        [`ledger on, PostgreSQL by URL (${r.ledger.serverRows} rows written)`, round(r.ledger.cpuSPer1kCalls.server * 1000), round(r.ledger.serverRatio)],
      ],
    ),
    "",
    piiSection(r.pii),
    needsSection(r.needs),
    batchSection(r.batch),
    resumeSection(r.resume),
    "",
    `## 10. Response cache (issue #26): exact cache, gRPC edge, upstream TTFT ${r.cache.upstreamTtftMs} ms; a miss asks something new each time, a hit the same question`,
    table(
      ["path", ...r.cache.levels.map((c) => `TTFT p50 / p99 ms at ${c}`)],
      (["direct", "off", "miss", "hit"] as const).map((name) => [
        { direct: "direct (baseline)", off: "Sluice, alias without a cache", miss: "Sluice, exact cache, miss", hit: "Sluice, exact cache, hit" }[name],
        ...r.cache.levels.map((c) => `${round(r.cache.results[name]![c]!.p50)} / ${round(r.cache.results[name]![c]!.p99)}`),
      ]),
    ),
    "",
    `Semantic cache: nearest-entry lookup (the embedding call excluded) at ${r.semantic.entries} stored ${r.semantic.dims}-dimension vectors in one alias and scope, HNSW with iterative scan, ${SEMANTIC_LOOKUPS[r.mode]} lookups each.`,
    table(
      ["store", "lookup p50 ms", "lookup p99 ms", "index build s"],
      [
        ["PGlite (embedded)", round(r.semantic.lookupMs.pglite.p50), round(r.semantic.lookupMs.pglite.p99), round(r.semantic.lookupMs.pglite.indexBuildS)],
        ["server by URL (PGlite over the wire)", round(r.semantic.lookupMs.url.p50), round(r.semantic.lookupMs.url.p99), round(r.semantic.lookupMs.url.indexBuildS)],
      ],
    ),
    "",
    `Semantic cache, a miss (every question new: embedded, looked up, stored after it completed), 1 stream, TTFT p50 / p99 ms; the embedding call is the simulator's /embeddings called straight, in the same rounds:`,
    table(
      ["store", "alias without a cache", "semantic miss", "added p50", "embedding call"],
      (["pglite", "url"] as const).map((m) => {
        const x = r.cache.semanticMiss[m];
        return [m === "pglite" ? "PGlite (embedded)" : "server by URL (PGlite over the wire)", `${round(x.results.off.p50)} / ${round(x.results.off.p99)}`, `${round(x.results.semanticMiss.p50)} / ${round(x.results.semanticMiss.p99)}`, `+${round(x.addedMs)}`, `${round(x.results.embed.p50)} / ${round(x.results.embed.p99)}`];
      }),
    ),
    "",
    `The simulator's embedding model on the evaluation set (bench/paraphrases.ts: ${r.semantic.pairs.positives} reworded pairs, ${r.semantic.pairs.negatives} hard negatives sharing their wording):`,
    table(
      ["threshold", "hit rate (reworded pairs at or past it)", "false-hit rate (negatives at or past it)"],
      r.semantic.thresholds.map((t) => [t.threshold, `${round(t.hitRate * 100)}%`, `${round(t.falseHitRate * 100)}%`]),
    ),
  ].join("\n");

  const svg = lineChart(
    "TTFT overhead vs concurrency (gateway − direct)",
    "concurrent streams",
    "overhead (ms)",
    gateways.flatMap((k, i) => [
      { name: `${NAMES[k]} p50`, color: ["#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#7f7f7f"][i]!, points: r.ttft.levels.map((c) => ({ x: c, y: overhead(k, c, "p50") })) },
      { name: `${NAMES[k]} p99`, color: ["#6baed6", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#c7c7c7"][i]!, points: r.ttft.levels.map((c) => ({ x: c, y: overhead(k, c, "p99") })) },
    ]),
  );
  const name = resultsName(r.mode);
  await writeFile(join(RESULTS, `${name}.json`), `${JSON.stringify({ ...r, goals: goalList }, null, 2)}\n`);
  await writeFile(join(RESULTS, `${name}.md`), md);
  await writeFile(join(RESULTS, chartName(r.mode)), svg);
  process.stdout.write(`${md}\n`);
  log(`wrote bench/results/${name}.{json,md} and the TTFT chart`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
