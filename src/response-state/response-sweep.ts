import { clampDelay } from "../core/timers.js";
import type { Logger } from "../logging/logger.js";
import type { ResponseStore } from "./stored-response.js";

export interface ResponseSweepOptions {
  readonly store: Pick<ResponseStore, "sweep">;
  /** `responses.sweepIntervalMs`. */
  readonly intervalMs: number;
  /**
   * Whether the database is open. A sweep never opens it: a gateway whose
   * clients store nothing never starts the embedded PGlite for a sweep,
   * and expired rows are invisible to every read until one runs.
   */
  readonly ready: () => boolean;
  readonly logger: Logger;
}

/**
 * Removes expired stored responses every `intervalMs` (docs/responses.md,
 * "Storage"). The timer keeps no process alive; one sweep runs at a time;
 * a failed sweep is logged and the next one tries again. Returns the stop,
 * which waits for a sweep in flight so the database closes after it.
 */
export function startResponseSweep(options: ResponseSweepOptions): () => Promise<void> {
  let running: Promise<void> | undefined;
  const sweep = () => {
    if (running || !options.ready()) return;
    const startedAt = performance.now();
    running = options.store
      .sweep()
      .then((removed) => {
        if (removed > 0) options.logger.info({ event: "responses.swept", removed, ms: Math.round(performance.now() - startedAt) });
      })
      .catch((error: unknown) => options.logger.warn({ event: "responses.sweep_failed", error: error instanceof Error ? error.message : "unknown" }))
      .finally(() => (running = undefined));
  };
  const timer = setInterval(sweep, clampDelay(options.intervalMs));
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
