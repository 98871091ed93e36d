import { monitorEventLoopDelay } from "node:perf_hooks";
import type { ReloadCounts } from "../config/live-config.js";
import type { Exchange } from "../http/exchange.js";
import { type AnyRequest, type AnyResponse, pathOf, sendJson } from "../http/node-http.js";
import type { ConnectionGuard } from "./connection-guard.js";

/**
 * `GET /debug/runtime`: memory, event-loop delay, streams, connections and
 * configuration reloads (ok, failed), read from inside the process (off by
 * default; `server.debugEndpoints: true`). The benchmark and the hardening
 * tests use it; `?reset=1` starts a new delay window, and `?gc=1` collects
 * garbage first when the process runs with --expose-gc, so that heap figures
 * are live memory rather than garbage not yet collected.
 */
export function createRuntimeStats(registry: { readonly active: number }, connections: () => ConnectionGuard | undefined, reloads: () => ReloadCounts): (req: AnyRequest, res: AnyResponse, exchange: Exchange) => boolean {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const ms = (ns: number) => Math.round(ns / 10_000) / 100;
  return (req, res, exchange) => {
    if (req.method !== "GET" || pathOf(req) !== "/debug/runtime") return false;
    exchange.edge = "http";
    exchange.route = "/debug/runtime";
    const query = new URLSearchParams((req.url ?? "").split("?")[1] ?? "");
    const gc = (globalThis as { gc?: () => void }).gc;
    if (query.get("gc") === "1" && gc) gc();
    const memory = process.memoryUsage();
    const guard = connections();
    const resources: Record<string, number> = {};
    for (const type of process.getActiveResourcesInfo()) resources[type] = (resources[type] ?? 0) + 1;
    const body = {
      rssBytes: memory.rss,
      resources,
      heapUsedBytes: memory.heapUsed,
      heapTotalBytes: memory.heapTotal,
      externalBytes: memory.external,
      activeStreams: registry.active,
      openConnections: guard?.open,
      connectionsClosed: guard?.closed,
      eventLoopDelayMs: { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max: ms(delay.max) },
      configReloads: reloads(),
    };
    if (query.get("reset") === "1") delay.reset();
    exchange.code = "ok";
    sendJson(res, 200, body);
    return true;
  };
}
