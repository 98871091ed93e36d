export interface BackoffOptions {
  /** The delay before the first retry (`attempt` 0). */
  readonly baseMs: number;
  /** The ceiling; without one the delay keeps doubling (the caller bounds the attempts). */
  readonly maxMs?: number;
  /**
   * `"full"`: a random delay in [0, ceiling), floored to whole milliseconds,
   * so that many callers failing at once do not retry in step.
   */
  readonly jitter?: "full";
  /** Injected so that tests can pin the jitter; `Math.random` otherwise. */
  readonly random?: () => number;
}

/** Past this many doublings every delay is at any ceiling a timer can hold; it keeps `0 × 2^n` from being NaN. */
const MAX_DOUBLINGS = 64;

/**
 * Capped exponential backoff, `min(maxMs, baseMs × 2^attempt)`, the one
 * formula behind every retry in Sluice (upstream failover, drains, alert
 * delivery, batch queueing, Redis reconnection). Each caller keeps its own
 * numbers and its own count: `attempt` is the number of doublings, 0 for
 * the first wait.
 */
export function backoffDelay(attempt: number, options: BackoffOptions): number {
  const ceiling = Math.min(options.maxMs ?? Number.POSITIVE_INFINITY, options.baseMs * 2 ** Math.min(Math.max(0, attempt), MAX_DOUBLINGS));
  if (options.jitter !== "full") return ceiling;
  return Math.floor((options.random ?? Math.random)() * ceiling);
}
