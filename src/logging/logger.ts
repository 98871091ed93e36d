import { writeSync } from "node:fs";
import { type Logger, pino } from "pino";
import { redactSecrets } from "./log-redaction.js";

export type { Logger };

/**
 * Lines are gathered until this many bytes are waiting, or until the next
 * flush tick, and then written in one call. Measured on the bench's machine
 * (2 shared cores): each asynchronous write to a stdout pipe cost about
 * 250 µs of the loop's time, as much as the rest of a short stream's own
 * work, and the access line and a start line were two of them per request.
 */
export const LOG_BUFFER_BYTES = 8 * 1024;
/** The longest a line waits in the buffer: what a log reader sees as lag. */
export const LOG_FLUSH_MS = 100;
/** Past this much unwritten output (stdout not read), further lines are dropped and counted, not held. */
export const LOG_MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

/**
 * JSON logs to stdout. Redaction (log-redaction.ts) is a second line of
 * defence: secrets are `Secret` objects that print as "[redacted]", and no
 * code logs headers, but should a header object slip in, its credentials
 * are still cut.
 *
 * Without a destination, output is buffered (above) and flushed on a timer,
 * at exit (pino's exit hook writes what is left synchronously) and by
 * `logger.flush()`; lines dropped because stdout stopped draining are
 * reported by a `log.dropped` line once it drains again.
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    base: { service: "sluice" },
    formatters: { log: redactSecrets },
  };
  if (destination) return pino(options, destination as pino.DestinationStream);
  const out = pino.destination({ dest: 1, sync: false, minLength: LOG_BUFFER_BYTES, maxLength: LOG_MAX_BUFFERED_BYTES });
  const logger = pino(options, out);
  let dropped = 0;
  // While the report itself is written, a drop means the report was dropped: the count stays for the next tick.
  let reporting = false;
  let reportLost = false;
  out.on("drop", () => {
    if (reporting) reportLost = true;
    else dropped++;
  });
  guardExitFlush(out, 1);
  setInterval(() => {
    if (dropped > 0) {
      reporting = true;
      logger.warn({ event: "log.dropped", lines: dropped });
      reporting = false;
      if (!reportLost) dropped = 0;
      reportLost = false;
    }
    if (hasUnwritten(out)) out.flush();
  }, LOG_FLUSH_MS).unref();
  return logger;
}

/**
 * Whether lines wait in the buffer with no write under way. sonic-boom's
 * flush() does nothing while a write is in progress, and a write loop that
 * drains a burst stops once less than `minLength` is left: a tick that
 * flushed during the burst and then forgot left the last lines (and the
 * `log.dropped` report) unwritten until the next line came. So each tick
 * looks at the writer's own state, read from its fields (sonic-boom 4.x:
 * `_len` bytes buffered, `_writing`); no public API says this.
 */
export function hasUnwritten(out: object): boolean {
  const state = out as { readonly _len?: number; readonly _writing?: boolean };
  return (state._len ?? 0) > 0 && state._writing !== true;
}

/**
 * pino writes what is still buffered synchronously when the process exits,
 * and its writer retries a failed write forever: a gateway whose log reader
 * had closed stdout (EPIPE) hung in its exit hook instead of exiting. A
 * zero-byte write says whether anyone still reads; if not, the buffered
 * lines are dropped and the process exits.
 */
export function guardExitFlush(out: { flushSync(): void }, fd: number): void {
  const flushSync = out.flushSync.bind(out);
  out.flushSync = () => {
    if (isWritable(fd)) flushSync();
  };
}

/** False once the other end of `fd` is gone (EPIPE) or the descriptor is unusable. */
export function isWritable(fd: number): boolean {
  try {
    writeSync(fd, "");
    return true;
  } catch {
    return false;
  }
}
