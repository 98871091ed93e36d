/**
 * Node's timers hold a signed 32-bit millisecond count: anything at or
 * above 2^31 ms (24.8 days) overflows and fires after 1 ms, with only a
 * warning. Every delay that a client or a configuration can influence
 * passes through `clampDelay` before it reaches setTimeout.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export function clampDelay(ms: number): number {
  if (!(ms > 0)) return 0;
  return Math.min(ms, MAX_TIMER_MS);
}

/**
 * The clock and timers of a long-lived loop (a WatchStats stream, the live
 * statistics' per-second buckets). Injected so that tests move time
 * themselves instead of sleeping; `systemTimers` is the real one.
 */
export interface Timers {
  /** Epoch milliseconds. */
  now(): number;
  /** Calls `callback` once after `ms` (clamped to Node's timer range); returns a handle for `clearTimeout`. */
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemTimers: Timers = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, clampDelay(ms)),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * Waits `ms` on `timers`. Resolves true when the time has passed, false as
 * soon as `signal` aborts (the timer is cleared then, so a departed client
 * leaves nothing scheduled behind).
 */
export function delay(timers: Timers, ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      timers.clearTimeout(handle);
      resolve(false);
    };
    const handle = timers.setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
