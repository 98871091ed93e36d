/** Thrown when Redis took longer than the caller's timeout. */
export class StoreTimeoutError extends Error {
  override readonly name = "StoreTimeoutError";
}

/**
 * Calls `fn` once `ms` have passed and the event loop has since polled its
 * sockets once more; returns a cancel. Timers run before the loop polls,
 * so on a busy loop a plain timer beats a reply that has been waiting in
 * the socket all along; the extra turn lets the reply be read first.
 */
export function graced(ms: number, fn: () => void): () => void {
  let immediate: NodeJS.Immediate | undefined;
  const timer = setTimeout(() => {
    immediate = setImmediate(fn);
  }, ms);
  return () => {
    clearTimeout(timer);
    if (immediate) clearImmediate(immediate);
  };
}

/**
 * Calls `expired(writtenAt)` once `ms` have passed since a Redis command
 * issued just now was written (graced, as above); returns a cancel.
 * ioredis writes a command to the socket when it is issued; the clock
 * starts at the next immediate, so a loop busy between the two is not
 * counted as Redis's time.
 */
export function afterWrite(ms: number, expired: (writtenAt: number) => void): () => void {
  let cancelTimer: (() => void) | undefined;
  const start = setImmediate(() => {
    const writtenAt = performance.now();
    cancelTimer = graced(ms, () => expired(writtenAt));
  });
  return () => {
    clearImmediate(start);
    cancelTimer?.();
  };
}

/**
 * `work` (a Redis command issued just now), or a rejection once `ms` have
 * passed since it was written (afterWrite). For calls with nothing better
 * to do than give up; the tenant store's waits follow the connection as a
 * whole instead (redis-watch.ts). A written command cannot be
 * withdrawn, so `work` still settles after a timeout.
 */
export function within<T>(work: Promise<T>, ms: number, operation: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const cancel = afterWrite(ms, () => reject(new StoreTimeoutError(`${operation}: no answer from Redis within ${ms} ms`)));
    work.then(
      (value) => {
        cancel();
        resolve(value);
      },
      (error: unknown) => {
        cancel();
        reject(error);
      },
    );
  });
}
