import type { DeltaSink, Feed } from "./delta-sink.js";

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

/**
 * The pushed form of withHeartbeats: a heartbeat goes into `sink` whenever
 * the producer has pushed nothing for `intervalMs`, while the sink has
 * credit (a client that is not reading is not pinged, as a pulled stream
 * that is not pulled is not). One timer per stream, re-armed per item.
 */
export function withPushedHeartbeats<T>(start: (sink: DeltaSink<T>) => Feed, sink: DeltaSink<T | Heartbeat>, intervalMs: number): Feed {
  let credit = true;
  const timer = setTimeout(() => {
    if (credit) credit = sink.push(HEARTBEAT, false);
    timer.refresh();
  }, intervalMs);
  const feed = start({
    push(item, more) {
      timer.refresh();
      credit = sink.push(item, more);
      return credit;
    },
    end(error) {
      clearTimeout(timer);
      sink.end(error);
    },
  });
  return {
    resume() {
      credit = true;
      feed.resume();
    },
    cancel(reason) {
      clearTimeout(timer);
      feed.cancel(reason);
    },
  };
}
