import type { UpstreamWindow } from "../core/call-summary.js";

/** Response header (HTTP) or metadata (gRPC): the gateway's own time to the client's first byte, in milliseconds. */
export const OVERHEAD_HEADER = "sluice-overhead-ms";

/**
 * What the gateway itself added before the client's first byte, in
 * milliseconds: the time from the request's arrival to the moment its
 * response headers are committed (they go out with, or just before, the
 * first byte), less the time it waited on its upstream. That wait runs
 * from the first upstream request sent (any attempt, after admission and
 * building the request) to the last upstream event the first write needed:
 * the first delta of a streamed answer, the end of the upstream's answer
 * for a whole one (a non-streamed response, an embedding), or the write
 * itself when headers go out before the upstream answered (a heartbeat).
 * Retries, failover, backoff and hedges inside that window are the
 * upstream's; admission queues, key checks, body parsing, stages,
 * building the request and writing the first delta are the gateway's. A
 * call that never reached an upstream (a refusal, a cache hit) is all
 * gateway. For a whole answer, the per-delta work done while the upstream
 * streams falls inside the wait (the stream metrics measure it).
 */
export function overheadMs(arrivedAt: number, window: UpstreamWindow, now: number): number {
  const { sentAt } = window;
  if (sentAt === undefined) return Math.max(0, now - arrivedAt);
  const waitedUntil = Math.min(now, window.endedAt ?? window.answeredAt ?? now);
  return Math.max(0, now - arrivedAt - (waitedUntil - sentAt));
}

/** The header's value: milliseconds to the microsecond. */
export function overheadValue(ms: number): string {
  return ms.toFixed(3);
}

/**
 * The header for a call refused before it reached the call layer (its key,
 * its body): all of its time is the gateway's.
 */
export function refusalOverhead(arrivedAt: number): Readonly<Record<string, string>> {
  return { [OVERHEAD_HEADER]: overheadValue(performance.now() - arrivedAt) };
}

/** Told once per call the overhead its first write carried, with the call's edge: the histogram. */
export type OverheadReport = (edge: string, ms: number) => void;

/**
 * The call's `sluice-overhead-ms`, measured at the first read (the edge
 * reads its headers when it commits them) and the same at every read
 * after, reported once. None for a call whose arrival is unknown (a batch
 * line, a summary: no client waits on their first byte).
 */
export function overheadAtFirstWrite(arrivedAt: number | undefined, window: UpstreamWindow, edge: string, report?: OverheadReport): () => Readonly<Record<string, string>> {
  if (arrivedAt === undefined) return () => NO_HEADER;
  let header: Readonly<Record<string, string>> | undefined;
  return () => {
    if (header) return header;
    const ms = overheadMs(arrivedAt, window, performance.now());
    report?.(edge, ms);
    header = { [OVERHEAD_HEADER]: overheadValue(ms) };
    return header;
  };
}

const NO_HEADER: Readonly<Record<string, string>> = Object.freeze({});
