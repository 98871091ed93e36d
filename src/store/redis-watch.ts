import { afterWrite, graced, StoreTimeoutError } from "./within.js";

export interface RedisWatchOptions {
  /** A call that has had no answer this long after it was written is slow (reported, still waited for). */
  readonly timeoutMs: number;
  /** Redis counts as down once the connection has been silent for this many `timeoutMs` while a call waited. */
  readonly downAfterTimeouts: number;
  /** The first time a call passes its deadline since the last answer. */
  readonly onSlow: (operation: string) => void;
  /** The silence reached the outage threshold: every waiting call is about to be rejected. */
  readonly onSilent: (operation: string, error: StoreTimeoutError) => void;
}

/**
 * Waits for Redis answers on one connection, and decides when Redis is
 * down. Why not one deadline per call: under load, a replica's batch of
 * admissions can be answered 300–600 ms after it was written while Redis
 * and the connection are fine; deciding each late call locally admitted
 * on the replica's fallback share on top of what Redis admitted, so a key
 * got more than its limit. Here a call waits for its answer until the
 * connection has been silent, with calls waiting, for
 * `downAfterTimeouts × timeoutMs` since the later of its own write and the
 * last answer to any call. Then Redis is down, and every waiting call is
 * rejected at once (its fail mode decides). A Redis that keeps answering,
 * slowly, is never down; a stopped one is found within that bound.
 */
export interface RedisWatch {
  /** `work` (a command issued just now), or a StoreTimeoutError once Redis counts as down. Errors of `work` pass through. */
  wait<T>(work: Promise<T>, operation: string): Promise<T>;
  /** Calls waiting for an answer now. */
  readonly waiting: number;
}

interface Waiter {
  readonly operation: string;
  writtenAt: number;
  slow: boolean;
  cancel: () => void;
  readonly fail: (error: StoreTimeoutError) => void;
}

export function createRedisWatch(options: RedisWatchOptions): RedisWatch {
  const waiters = new Set<Waiter>();
  let lastAnswerAt = Number.NEGATIVE_INFINITY;
  let slowReported = false;
  const silenceLimit = options.downAfterTimeouts * options.timeoutMs;

  const answered = () => {
    lastAnswerAt = performance.now();
    slowReported = false;
  };

  const silent = (w: Waiter) => {
    const error = new StoreTimeoutError(`${w.operation}: no answer from Redis for ${silenceLimit} ms`);
    options.onSilent(w.operation, error);
    for (const waiter of [...waiters]) waiter.fail(error);
  };

  const check = (w: Waiter) => {
    if (!w.slow) {
      w.slow = true;
      if (!slowReported) {
        slowReported = true;
        options.onSlow(w.operation);
      }
    }
    const quietFor = performance.now() - Math.max(lastAnswerAt, w.writtenAt);
    if (quietFor >= silenceLimit) silent(w);
    else w.cancel = graced(silenceLimit - quietFor, () => check(w));
  };

  return {
    get waiting() {
      return waiters.size;
    },
    wait<T>(work: Promise<T>, operation: string): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const w: Waiter = {
          operation,
          writtenAt: Number.POSITIVE_INFINITY,
          slow: false,
          cancel: () => undefined,
          fail: (error) => {
            waiters.delete(w);
            w.cancel();
            reject(error);
          },
        };
        waiters.add(w);
        w.cancel = afterWrite(options.timeoutMs, (writtenAt) => {
          w.writtenAt = writtenAt;
          check(w);
        });
        work.then(
          (value) => {
            answered();
            if (!waiters.delete(w)) return;
            w.cancel();
            resolve(value);
          },
          (error: unknown) => {
            // A rejection is an answer (an error reply) or the connection's loss; either way nothing more will come.
            answered();
            if (!waiters.delete(w)) return;
            w.cancel();
            reject(error);
          },
        );
      });
    },
  };
}
