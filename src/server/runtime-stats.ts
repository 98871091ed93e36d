import { monitorEventLoopDelay } from "node:perf_hooks";
import type { StreamRegistry } from "../pipeline/stream-registry.js";
import type { AnyRequest, AnyResponse } from "./health.js";

/**
 * `GET /debug/runtime`: memory, event-loop delay and streams in flight, read
 * from inside the process (off by default; `server.debugEndpoints: true`).
 * The benchmark uses it; `?reset=1` starts a new delay window, and `?gc=1`
 * collects garbage first when the process runs with --expose-gc, so that
 * heap figures are live memory rather than garbage not yet collected.
 */
export function createRuntimeStats(registry: StreamRegistry): (req: AnyRequest, res: AnyResponse) => boolean {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const ms = (ns: number) => Math.round(ns / 10_000) / 100;
  return (req, res) => {
    const url = req.url ?? "/";
    if (req.method !== "GET" || !url.startsWith("/debug/runtime")) return false;
    const gc = (globalThis as { gc?: () => void }).gc;
    if (url.includes("gc=1") && gc) gc();
    const memory = process.memoryUsage();
    const body = JSON.stringify({
      rssBytes: memory.rss,
      heapUsedBytes: memory.heapUsed,
      activeStreams: registry.active,
      eventLoopDelayMs: { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max: ms(delay.max) },
    });
    if (url.includes("reset=1")) delay.reset();
    res.writeHead(200, { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) });
    res.end(body);
    return true;
  };
}
