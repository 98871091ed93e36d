import type { Logger } from "../../logging/logger.js";
import { createLineSplitter, type LineSplitter } from "./line-splitter.js";

/** The longest stderr line logged; longer lines are cut to it (their bytes still count). */
export const MAX_STDERR_LINE_BYTES = 4_096;

/**
 * A stdio server's stderr, logged as lines at most `bytesPerSecond` bytes
 * a second (its `maxStderrBytesPerSecond`). Past it, lines are counted and
 * dropped, never buffered: a server flooding stderr costs the gateway the
 * reading, not memory, and the count is logged once the next second lets
 * lines through again (and at the end). The clock is injected.
 */
export interface StderrLog {
  readonly splitter: LineSplitter;
  /** Lines dropped so far (rate limit), for tests and the end-of-process line. */
  readonly dropped: number;
  flush(): void;
}

export function createStderrLog(server: string, bytesPerSecond: number, log: Logger, now: () => number): StderrLog {
  let second = Math.floor(now() / 1000);
  let spent = 0;
  let dropped = 0;
  let droppedBytes = 0;
  let reported = 0;
  let reportedBytes = 0;
  const report = () => {
    if (dropped === reported) return;
    log.warn({ event: "mcp.stderr_dropped", server, lines: dropped - reported, bytes: droppedBytes - reportedBytes, setting: "maxStderrBytesPerSecond" });
    reported = dropped;
    reportedBytes = droppedBytes;
  };
  const line = (bytes: Buffer, size: number) => {
    const current = Math.floor(now() / 1000);
    if (current !== second) {
      second = current;
      spent = 0;
      report();
    }
    if (spent + size > bytesPerSecond) {
      dropped++;
      droppedBytes += size;
      return;
    }
    spent += size;
    log.info({ event: "mcp.stderr", server, line: bytes.subarray(0, MAX_STDERR_LINE_BYTES).toString("utf8") });
  };
  const splitter = createLineSplitter(
    MAX_STDERR_LINE_BYTES,
    (bytes) => line(bytes, bytes.length + 1),
    (size, tail) => line(tail, size + 1),
  );
  return {
    splitter,
    get dropped() {
      return dropped;
    },
    flush: report,
  };
}
