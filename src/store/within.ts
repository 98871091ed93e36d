/** Thrown when Redis took longer than the caller's timeout. */
export class StoreTimeoutError extends Error {
  override readonly name = "StoreTimeoutError";
}

/**
 * `work` (a Redis command issued just now), or a rejection once `ms` have
 * passed since the command was written and the event loop has since had
 * the chance to read its reply.
 *
 * Why not a plain timer race: on a replica whose event loop is busy
 * (starting many streams at once), a timer started at issue time counts
 * the loop's own delay as Redis's, and because timers run before the loop
 * polls its sockets, a reply that arrived long ago loses to the timer.
 * That made a busy replica declare Redis slow, fall back to its local
 * share and over-admit. So the clock starts where node-redis writes
 * (it writes queued commands in a `setImmediate`; ours is queued after it
 * and immediates run in order), and an expired timer gives its verdict
 * only after one more poll phase.
 *
 * node-redis cannot withdraw a written command (that would break the reply
 * order): `work` still settles after a timeout, and callers that must not
 * lose its outcome keep `work` and act on it (fail-open-store.ts).
 */
export function within<T>(work: Promise<T>, ms: number, operation: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = () => {
      done = true;
      clearImmediate(start);
      clearTimeout(timer);
    };
    work.then(
      (value) => {
        if (done) return;
        finish();
        resolve(value);
      },
      (error: unknown) => {
        if (done) return;
        finish();
        reject(error);
      },
    );
    const start = setImmediate(() => {
      if (done) return;
      timer = setTimeout(() => {
        setImmediate(() => {
          if (done) return;
          done = true;
          reject(new StoreTimeoutError(`${operation}: no answer from Redis within ${ms} ms`));
        });
      }, ms);
    });
  });
}
