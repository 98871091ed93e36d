import type { DeltaSink, Feed } from "../core/delta-sink.js";
import { toGatewayError } from "../core/errors.js";

/**
 * A feed whose producer starts once `pending` settles (a request screened
 * in slices): resumes asked for meanwhile are passed on when it starts; a
 * cancel before then ends the sink at once, and the producer never starts;
 * a rejection ends the sink with it.
 */
export function feedAfter<T, D>(pending: Promise<T>, sink: DeltaSink<D>, start: (value: T) => Feed): Feed {
  let inner: Feed | undefined;
  let ended = false;
  let resumed = false;
  pending.then(
    (value) => {
      if (ended) return;
      inner = start(value);
      if (resumed) inner.resume();
    },
    (error: unknown) => {
      if (ended) return;
      ended = true;
      sink.end(toGatewayError(error));
    },
  );
  return {
    resume() {
      if (inner) inner.resume();
      else resumed = true;
    },
    cancel(reason) {
      if (inner) return inner.cancel(reason);
      if (ended) return;
      ended = true;
      sink.end(reason);
    },
  };
}
