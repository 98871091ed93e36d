import { type GatewayError, toGatewayError } from "./errors.js";

/**
 * Where a producer pushes its items: the writer of an edge, a stage that
 * observes and passes on, or a queue a pulling consumer reads.
 *
 * Why push: a pulled stream is a chain of async generators, one per stage,
 * each suspended and resumed (a promise, a closure, a microtask) for every
 * token; on slow streams what a suspended generator holds lives long enough
 * to be promoted. Pushed, a token goes from the upstream read to the
 * client's socket in one synchronous call chain.
 *
 * Backpressure is credit: `push` answers false when the sink wants nothing
 * more for now (its socket's buffer is full), and the producer then stops
 * reading upstream after the items of the read in hand, until
 * `Feed.resume`. Items already decoded are always delivered: at most one
 * upstream read (bounded by its high-water mark) is in flight beyond what
 * the sink asked for.
 */
export interface DeltaSink<T> {
  /**
   * One item. `more`: further items are already decoded and follow at once
   * (the rest of the same upstream read), so a writer may join them into
   * one write. False: pause.
   */
  push(item: T, more: boolean): boolean;
  /** The end, once: nothing on success, else the failure. */
  end(error?: GatewayError): void;
}

/** The producer's side of a push stream, as its consumer holds it. */
export interface Feed {
  /** After `push` answered false: the sink takes items again. */
  resume(): void;
  /** The consumer is gone: the producer releases everything now and calls `end` with `reason`, if it has not ended. */
  cancel(reason: GatewayError): void;
}

/** Starts a producer that pushes into the sink it is given. */
export type Producer<T> = (sink: DeltaSink<T>) => Feed;

/** A pulled stream over a producer, and how many items are decoded and waiting (pulling those waits for no I/O). */
export interface PulledStream<T> extends AsyncGenerator<T, void, undefined> {
  buffered(): number;
}

/**
 * A producer read by pulling: for consumers that fold a whole answer, tests,
 * and the stores that write what they pull. The producer is resumed only
 * when the consumer has taken everything queued and asks for more, so the
 * pace is the consumer's, as with a generator; returning early cancels it.
 */
export function pullFrom<T>(produce: Producer<T>, gone: GatewayError): PulledStream<T> {
  const queue: T[] = [];
  let head = 0;
  let ended = false;
  let failure: GatewayError | undefined;
  let waiter: { resolve(result: IteratorResult<T, void>): void; reject(error: unknown): void } | undefined;
  let paused = false;
  let feed: Feed | undefined;

  const wake = () => {
    const w = waiter;
    if (!w) return;
    if (head < queue.length) {
      waiter = undefined;
      w.resolve({ value: take(), done: false });
    } else if (ended) {
      waiter = undefined;
      if (failure) w.reject(failure);
      else w.resolve({ value: undefined, done: true });
    }
  };
  const take = (): T => {
    const item = queue[head]!;
    queue[head++] = undefined as T;
    if (head === queue.length) {
      queue.length = 0;
      head = 0;
    }
    return item;
  };
  const sink: DeltaSink<T> = {
    push(item) {
      if (ended) return false;
      queue.push(item);
      wake();
      // Credit for one read at a time: more only once the consumer has taken all.
      paused = head < queue.length || waiter === undefined;
      return !paused;
    },
    end(error) {
      if (ended) return;
      ended = true;
      failure = error;
      wake();
    },
  };
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    feed = produce(sink);
  };

  const iterator: PulledStream<T> = {
    next() {
      start();
      if (head < queue.length) {
        const value = take();
        return Promise.resolve({ value, done: false });
      }
      if (ended) return failure ? Promise.reject(failure) : Promise.resolve({ value: undefined, done: true });
      const waiting = new Promise<IteratorResult<T, void>>((resolve, reject) => {
        waiter = { resolve, reject };
      });
      if (paused) {
        paused = false;
        feed?.resume();
      }
      return waiting;
    },
    async return() {
      if (!ended) {
        ended = true;
        feed?.cancel(gone);
      }
      queue.length = 0;
      head = 0;
      return { value: undefined, done: true };
    },
    async throw(error: unknown) {
      if (!ended) {
        ended = true;
        feed?.cancel(toGatewayError(error));
      }
      throw error;
    },
    buffered: () => queue.length - head,
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  return iterator;
}

/**
 * A pulled stream pushed into a sink, under the sink's credit: for sources
 * that are naturally pulled (a stored log, a scripted test stream) feeding
 * a pushing writer.
 */
export function pushFrom<T>(source: AsyncIterator<T, void, undefined>, sink: DeltaSink<T>, buffered?: () => number): Feed {
  let paused = false;
  let running = false;
  let done = false;
  const run = async () => {
    if (running) return;
    running = true;
    try {
      while (!paused && !done) {
        const next = await source.next();
        if (done) return;
        if (next.done) {
          done = true;
          sink.end();
          return;
        }
        if (!sink.push(next.value, (buffered?.() ?? 0) > 0)) paused = true;
      }
    } catch (error) {
      if (done) return;
      done = true;
      sink.end(toGatewayError(error));
    } finally {
      running = false;
    }
  };
  void run();
  return {
    resume() {
      paused = false;
      void run();
    },
    cancel(reason) {
      if (done) return;
      done = true;
      void source.return?.().catch(() => undefined);
      sink.end(reason);
    },
  };
}
