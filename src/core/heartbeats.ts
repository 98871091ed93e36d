/** A stream message that says only "still here". Edges render it their own way. */
export interface Heartbeat {
  readonly type: "heartbeat";
}

export const HEARTBEAT: Heartbeat = Object.freeze({ type: "heartbeat" });

const TICK: unique symbol = Symbol("tick");

/**
 * Passes `source` through and inserts a heartbeat whenever it has been
 * silent for `intervalMs` (measured from the last item handed on, i.e. once
 * the consumer has written it). Pulls the source exactly as the consumer
 * pulls this generator, so backpressure is unchanged.
 */
export async function* withHeartbeats<T>(source: AsyncIterable<T>, intervalMs: number): AsyncGenerator<T | Heartbeat, void, undefined> {
  const iterator = source[Symbol.asyncIterator]();
  let pending: Promise<IteratorResult<T>> | undefined;
  let finished = false;
  try {
    for (;;) {
      pending ??= iterator.next();
      let timer: NodeJS.Timeout | undefined;
      const tick = new Promise<typeof TICK>((resolve) => {
        timer = setTimeout(resolve, intervalMs, TICK);
      });
      const result = await Promise.race([pending, tick]).finally(() => clearTimeout(timer));
      if (result === TICK) {
        yield HEARTBEAT;
        continue;
      }
      pending = undefined;
      if (result.done) {
        finished = true;
        return;
      }
      yield result.value;
    }
  } finally {
    // Early exit (consumer stopped, or an error): let the source clean up.
    // Not awaited: a source still blocked in next() settles on its own abort.
    if (!finished) iterator.return?.().catch(() => undefined);
  }
}
