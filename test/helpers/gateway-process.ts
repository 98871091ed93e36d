import { readFileSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import type { ConfigInput } from "../../src/config/schema.js";
import { type Started, startProcess } from "./processes.js";

export interface GatewayProcess extends Started {
  readonly url: string;
  readonly pid: number;
  /** The file given with --config: rewrite it and send SIGHUP to reload. */
  readonly configFile: string;
  /** Resident set size in bytes, from /proc. */
  rss(): number;
}

export interface GatewayProcessOptions {
  /** Extra Node flags, e.g. --expose-gc for live-heap figures from /debug/runtime?gc=1. */
  readonly nodeArgs?: readonly string[];
  /** The process environment (default: this process's). */
  readonly env?: NodeJS.ProcessEnv;
}

/** What GET /debug/runtime reports (server.debugEndpoints: true). */
export interface RuntimeStats {
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  /** Memory outside the JS heap the process's objects hold: Buffers, ArrayBuffers. */
  readonly externalBytes: number;
  readonly activeStreams: number;
  readonly openConnections: number;
  readonly connectionsClosed: Record<string, number>;
  readonly resources: Record<string, number>;
  readonly eventLoopDelayMs: { readonly p50: number; readonly p99: number; readonly max: number };
  readonly configReloads: { readonly ok: number; readonly failed: number };
}

/** Reads the gateway's own view of itself; `gc` collects garbage first (needs --expose-gc). */
export async function runtimeStats(url: string, query = ""): Promise<RuntimeStats> {
  const res = await fetch(`${url}/debug/runtime${query}`);
  return (await res.json()) as RuntimeStats;
}

/** The compiled gateway as its own process, so its memory and exit status are its own. */
export async function startGatewayProcess(config: ConfigInput, options: GatewayProcessOptions = {}): Promise<GatewayProcess> {
  const dir = await mkdtemp(join(tmpdir(), "sluice-gw-"));
  const file = join(dir, "sluice.yaml");
  await writeFile(file, stringify(config));
  const started = await startProcess([...(options.nodeArgs ?? []), "dist/src/main.js", "--config", file, "--port", "0"], (l) => l.event === "server.listening", options.env);
  const pid = started.child.pid!;
  return {
    ...started,
    url: started.line.url as string,
    pid,
    configFile: file,
    rss() {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]);
      return kb * 1024;
    },
  };
}
