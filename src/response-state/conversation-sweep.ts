import type { Logger } from "../logging/logger.js";

/**
 * Removes expired conversations every `intervalMs` (responses.sweepIntervalMs)
 * while `sweep` has a database to sweep: reads already skip expired rows, so
 * the sweep only gives their space back. Returns the stop.
 */
export function startConversationSweep(sweep: () => Promise<number> | undefined, intervalMs: number, logger: Logger): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    const pending = sweep();
    if (!pending) return;
    running = true;
    pending.then(
      (removed) => {
        running = false;
        if (removed > 0) logger.info({ event: "conversations.swept", removed });
      },
      (error: unknown) => {
        running = false;
        logger.warn({ event: "conversations.sweep_failed", error: error instanceof Error ? error.message : String(error) });
      },
    );
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
