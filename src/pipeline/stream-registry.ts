import { GatewayError } from "../core/errors.js";

/**
 * The streams in flight, so that shutdown can wait for them, and end them
 * (aborting their upstream requests) when the drain period is over.
 */
export interface StreamRegistry {
  readonly active: number;
  readonly draining: boolean;
  /**
   * Admits a stream; `abort` ends it from outside. Returns the function that
   * removes it. Throws `shutting_down` once draining has begun.
   */
  admit(abort: (reason: GatewayError) => void): () => void;
  /** Stops admitting streams. */
  startDraining(): void;
  /** Resolves true when no stream is left, or false after `timeoutMs`. */
  idle(timeoutMs: number): Promise<boolean>;
  abortAll(reason: GatewayError): void;
}

export function createStreamRegistry(): StreamRegistry {
  const streams = new Set<(reason: GatewayError) => void>();
  const waiters = new Set<() => void>();
  let draining = false;

  const settle = () => {
    if (streams.size > 0) return;
    for (const wake of waiters) wake();
    waiters.clear();
  };

  return {
    get active() {
      return streams.size;
    },
    get draining() {
      return draining;
    },
    admit(abort) {
      if (draining) throw new GatewayError("shutting_down", "the gateway is shutting down; retry on another instance");
      // A wrapper per stream, so the same function admitted twice is two entries.
      const entry = (reason: GatewayError) => abort(reason);
      streams.add(entry);
      // Idempotent: a stream is released by whichever of its ends comes first.
      return () => {
        if (streams.delete(entry)) settle();
      };
    },
    startDraining() {
      draining = true;
    },
    idle(timeoutMs) {
      if (streams.size === 0) return Promise.resolve(true);
      return new Promise((resolve) => {
        const done = (value: boolean) => {
          clearTimeout(timer);
          waiters.delete(wake);
          resolve(value);
        };
        const wake = () => done(true);
        const timer = setTimeout(() => done(false), timeoutMs);
        waiters.add(wake);
      });
    },
    abortAll(reason) {
      for (const abort of [...streams]) abort(reason);
    },
  };
}
