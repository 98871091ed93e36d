import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import type { RequestRecord } from "../src/simulator/records.js";
import { type Runtime, runtimeAt } from "./capacity.js";
import { BENCH_TIMEOUTS, GATEWAY_NODE_FLAGS } from "./gateway-launch.js";
import type { LoadSpec } from "./load.js";
import { type Mode, SIZES, type Sizes } from "./modes.js";
import { type Proc, runJson, startUntil } from "./procs.js";
import type { TargetKind, TargetSpec } from "./targets.js";

export const ROOT = process.cwd();
export const LOAD = join(ROOT, "dist/bench/load.js");
export const RESULTS = join(ROOT, "bench/results");
export const KiB = 1024;
/** Hedge after this long without a first token: above the healthy p99, far below the 2 s tail. */
export const HEDGE_AFTER_MS = 250;

/** What every scenario is handed: the run's mode and sizes, and the processes started once for the whole run. */
export interface Services {
  readonly mode: Mode;
  readonly size: Sizes;
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
  /** The gRPC floor (bench/floor-grpc.ts): a connect-node relay, what the gRPC edge is held against. */
  grpcFloor: Proc;
  grpcFloorUrl: string;
  /** The same gateway with a virtual key, Redis limits and a budget on every request. */
  limited: Proc;
  limitedUrl: string;
  /** A redis-server of the benchmark's own (its command counts are the gateway's alone). */
  redis?: Proc;
  redisPort: number;
}

/** The limited gateway's key: every limit and the budget on, far above what the load reaches. */
export const BENCH_KEY = "sk-bench-limited-0123456789abcdef";
/** A key with the same limits in a team in a business line, each level with every limit and a budget: admission checks three levels. */
export const BENCH_TEAM_KEY = "sk-bench-team-fedcba9876543210";

export function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export async function startServices(mode: Mode, options: { readonly peer: boolean }): Promise<Services> {
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
  const { proc: gateway, value: gatewayUrl } = await startUntil(process.execPath, [...GATEWAY_NODE_FLAGS, "--expose-gc", "dist/src/main.js", "--config", configFile, "--port", "0"], (line) =>
    line.includes('"server.listening"') ? (JSON.parse(line) as { url: string }).url : undefined,
  );
  const limits = await startLimitedGateway(dir, simInfo.openAiBaseUrl);
  const { proc: floor, url: floorUrl } = await startFloor(simInfo.openAiBaseUrl);
  const { proc: grpcFloor, url: grpcFloorUrl } = await startGrpcFloor(simInfo.openAiBaseUrl);
  const services: Services = { mode, size: SIZES[mode], simOrigin: simInfo.origin, simOpenAi: simInfo.openAiBaseUrl, sim, gateway, gatewayUrl, floor, floorUrl, grpcFloor, grpcFloorUrl, ...limits };
  if (options.peer) {
    const entry = join(ROOT, "bench/node_modules/@portkey-ai/gateway/build/start-server.js");
    if (!existsSync(entry)) {
      log("installing the peer gateway (bench/package.json)");
      execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: join(ROOT, "bench"), stdio: "inherit" });
    }
    const port = await freePort();
    const { proc } = await startUntil(process.execPath, ["-r", join(ROOT, "bench/peer/force-loopback.cjs"), entry, `--port=${port}`, "--headless"], (line) => (line.includes("Ready for connections") ? true : undefined), {
      env: { ...process.env, NODE_ENV: "production" },
      cwd: join(ROOT, "bench"),
    });
    services.peer = proc;
    services.peerUrl = `http://127.0.0.1:${port}/v1`;
  }
  return services;
}

/** A floor proxy (bench/floor-proxy.ts) on the simulator; --expose-gc so that its idle heap is read after a collection, as the gateway's is. */
export async function startFloor(simOpenAi: string): Promise<{ proc: Proc; url: string }> {
  const { proc, value } = await startUntil(process.execPath, ["--expose-gc", join(ROOT, "dist/bench/floor-proxy.js"), simOpenAi], (line) => (line.startsWith('{"url"') ? (JSON.parse(line) as { url: string }).url : undefined));
  return { proc, url: value };
}

/** The gRPC floor (bench/floor-grpc.ts) on the simulator: its HTTP/2 origin, and its `/_floor/stats` URL (a port of its own). */
export async function startGrpcFloor(simOpenAi: string): Promise<{ proc: Proc; url: string; stats: string }> {
  const { proc, value } = await startUntil(process.execPath, ["--expose-gc", join(ROOT, "dist/bench/floor-grpc.js"), simOpenAi], (line) => (line.startsWith('{"url"') ? (JSON.parse(line) as { url: string; stats: string }) : undefined));
  return { proc, ...value };
}

/**
 * Redis for the admission scenario: a redis-server of our own on a free
 * port when the binary is there (so INFO commandstats counts only this
 * gateway's commands), else the machine's on 6379 under a prefix of our own.
 */
export async function startRedis(): Promise<{ redis?: Proc; redisPort: number }> {
  try {
    execFileSync("redis-server", ["--version"], { stdio: "ignore" });
  } catch {
    log("no redis-server binary: using 127.0.0.1:6379 (command counts include other clients)");
    return { redisPort: 6379 };
  }
  const port = await freePort();
  const { proc } = await startUntil("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], (line) => (line.includes("Ready to accept connections") ? true : undefined));
  return { redis: proc, redisPort: port };
}

export const BENCH_LIMITS = { requestsPerMinute: 1_000_000, tokensPerMinute: 1_000_000_000, concurrentStreams: 1_000_000 };
export const BENCH_BUDGET = { usd: 1_000_000_000, period: "month" } as const;

export async function startLimitedGateway(dir: string, simOpenAi: string): Promise<Pick<Services, "limited" | "limitedUrl" | "redis" | "redisPort">> {
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
  const { proc: limited, value: limitedUrl } = await startUntil(process.execPath, [...GATEWAY_NODE_FLAGS, "dist/src/main.js", "--config", configFile, "--port", "0"], (line) =>
    line.includes('"server.listening"') ? (JSON.parse(line) as { url: string }).url : undefined,
  );
  return { limited, limitedUrl, ...(redis ? { redis } : {}), redisPort };
}

export function targetSpec(s: Services, kind: TargetKind): TargetSpec {
  switch (kind) {
    case "direct":
      return { kind, url: s.simOpenAi, model: "sim-1" };
    case "direct-embed":
      return { kind, url: s.simOpenAi, model: "sim-embed" };
    case "floor-sse":
      return { kind, url: s.floorUrl, model: "sim-1" };
    case "floor-grpc":
      return { kind, url: s.grpcFloorUrl, model: "sim-1" };
    case "sluice-grpc":
    case "sluice-grpc-connect":
      return { kind, url: s.gatewayUrl, model: "bench" };
    case "sluice-sse":
      return { kind, url: `${s.gatewayUrl}/v1`, model: "bench" };
    case "peer-sse":
      return { kind, url: s.peerUrl!, model: "sim-1", upstream: s.simOpenAi };
  }
}

export function targets(s: Services): TargetKind[] {
  return s.peer ? ["direct", "sluice-grpc", "sluice-sse", "peer-sse"] : ["direct", "sluice-grpc", "sluice-sse"];
}

/** The targets with the floor after the direct baseline: where the hop's own cost is the question (TTFT, cancellation). */
export function withFloor(kinds: TargetKind[]): TargetKind[] {
  return kinds.flatMap((k) => (k === "direct" ? [k, "floor-sse" as const] : [k]));
}

/**
 * The targets with both floors after the direct baseline: where each edge
 * is held against its own floor (issue #47), the gRPC edge against the gRPC
 * floor and the SSE edges against the HTTP floor (TTFT, CPU per delta).
 */
export function withFloors(kinds: TargetKind[]): TargetKind[] {
  return kinds.flatMap((k) => (k === "direct" ? [k, "floor-sse" as const, "floor-grpc" as const] : [k]));
}

export async function load<T>(spec: LoadSpec, timeoutMs = 300_000): Promise<T> {
  return runJson<T>([LOAD, JSON.stringify(spec)], timeoutMs);
}

export async function simReset(s: Services): Promise<void> {
  await fetch(`${s.simOrigin}/_sim/reset`, { method: "POST" });
}

/** Waits until the simulator serves no request: a peer that does not cancel upstream leaves streams running. */
export async function simIdle(s: Services): Promise<void> {
  const res = await fetch(`${s.simOrigin}/_sim/idle?timeout_ms=120000`);
  if (res.status !== 200) log(`simulator still busy: ${await res.text()}`);
}

export async function simRecords(s: Services): Promise<RequestRecord[]> {
  return (await (await fetch(`${s.simOrigin}/_sim/requests`)).json()) as RequestRecord[];
}

export function runtime(s: Services, options: { reset?: boolean; gc?: boolean } = {}): Promise<Runtime> {
  return runtimeAt(`${s.gatewayUrl}/debug/runtime`)(options);
}

export const NAMES: Record<TargetKind, string> = {
  direct: "direct (baseline)",
  "sluice-grpc": "Sluice gRPC",
  "sluice-grpc-connect": "Sluice gRPC, connect-node client",
  "sluice-sse": "Sluice SSE facade",
  "peer-sse": "Portkey (peer)",
  "floor-sse": "HTTP floor: byte-for-byte Node proxy",
  "floor-grpc": "gRPC floor: connect-node relay",
  "direct-embed": "the simulator's embeddings API",
};

/**
 * A gateway of its own for one side of a comparison, or for a scenario that
 * needs a fresh process, on the same simulator; `config` adds sections
 * (`telemetry`, `server`) to the plain one.
 */
export async function startGateway(
  s: Services,
  config: Record<string, unknown>,
  options: { exposeGc?: boolean; models?: Record<string, unknown>; provider?: Record<string, unknown>; readyEvent?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
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
    { ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }), ...(options.env ? { env: { ...process.env, ...options.env } } : {}) },
  );
  return { proc, url: value };
}

/** The machine a run was measured on, for its report. */
export function machine() {
  const cpu = cpus();
  return { cpus: cpu.length, model: cpu[0]?.model ?? "unknown", node: process.version, date: new Date().toISOString() };
}
