import { monitorEventLoopDelay } from "node:perf_hooks";

/**
 * What a floor's `GET /_floor/stats` answers: what the gateway's
 * `/debug/runtime` answers (memory, event-loop delay, streams in flight;
 * `?reset=1` starts a new delay window, `?gc=1` collects first when run with
 * --expose-gc), so that a scenario reads a floor as it reads the gateway.
 * Shared by both floors so that they are measured alike.
 */
export function createFloorStats(activeStreams: () => number): (query: URLSearchParams) => string {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  return (query) => {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (query.get("gc") === "1" && gc) gc();
    const memory = process.memoryUsage();
    const ms = (ns: number) => Math.round(ns / 10_000) / 100;
    const body = {
      rssBytes: memory.rss,
      heapUsedBytes: memory.heapUsed,
      heapTotalBytes: memory.heapTotal,
      externalBytes: memory.external,
      activeStreams: activeStreams(),
      eventLoopDelayMs: { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max: ms(delay.max) },
    };
    if (query.get("reset") === "1") delay.reset();
    return JSON.stringify(body);
  };
}
