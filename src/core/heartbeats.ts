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
 *
 * This sits on the per-delta path of every facade stream: one timer per
 * stream is re-armed with refresh() for each item, instead of a new timer
 * and promise race per item.
 */
export async function* withHeartbeats<T>(source: AsyncIterable<T>, intervalMs: number): AsyncGenerator<T | Heartbeat, void, undefined> {
  const iterator = source[Symbol.asyncIterator]();
  let pending: Promise<IteratorResult<T>> | undefined;
  let wake: ((tick: typeof TICK) => void) | undefined;
  // Fires into the current wait, if any; while an item is being handed on it finds none and lapses.
  const timer = setTimeout(() => wake?.(TICK), intervalMs);
  let finished = false;
  try {
    for (;;) {
      const next = (pending ??= iterator.next());
      const result = await new Promise<IteratorResult<T> | typeof TICK>((resolve, reject) => {
        wake = resolve;
        timer.refresh();
        next.then(resolve, reject);
      });
      wake = undefined;
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
    clearTimeout(timer);
    // Early exit (consumer stopped, or an error): let the source clean up.
    // Not awaited: a source still blocked in next() settles on its own abort.
    if (!finished) iterator.return?.().catch(() => undefined);
  }
}
