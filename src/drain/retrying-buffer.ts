import { backoffDelay } from "../core/backoff.js";
import { type BatchResult, causeOf, MAX_BACKOFF_MS, settleWithin, type WriterEvent } from "./batch-writer.js";
import { createIsolatingWriter, type IsolatedResult, type Isolation } from "./isolate.js";

export interface RetryingBufferOptions<T> {
  readonly maxBuffered: number;
  readonly batchSize: number;
  readonly flushMs: number;
  /** Writes one batch, in order; rejects to have it kept and tried again. */
  readonly write: (batch: readonly T[]) => Promise<BatchResult>;
  /**
   * How an item the database refuses is named and kept aside: it is
   * isolated (its batch's good items land), goes back to the front for the
   * next flushes, then to the dead-letter sink, so one bad item never
   * holds the buffer (drain/isolate.ts).
   */
  readonly isolation: Isolation<T>;
  readonly onEvent: (event: WriterEvent) => void;
}

export interface RetryingBuffer<T> {
  /** Keeps `item` for writing; false when the buffer is full and it was dropped (counted). */
  add(item: T): boolean;
  /** Lets the interval write; until then items only wait (the database opens behind the port). */
  start(): void;
  /** Items not yet written. */
  readonly waiting: number;
  /** Writes what waits now; a failure is reported and backed off from, not thrown. */
  flush(): Promise<void>;
  /** Writes what it can within `graceMs`; resolves with what is left unwritten. */
  close(graceMs: number): Promise<number>;
}

/**
 * Items written in batches off the request path, from a bounded buffer in
 * this process. While the database is away a failed batch goes back to
 * the front and is tried again with capped backoff, so order and count
 * are kept; past `maxBuffered` new items are dropped and counted, never
 * the process's memory (the batch being written counts: it is not written
 * until its write resolves, and a close that ends first reports it as
 * unwritten). The spend ledger (ledger/buffered-ledger.ts, without Redis)
 * and the audit log are this with their own write.
 */
export function createRetryingBuffer<T>(options: RetryingBufferOptions<T>): RetryingBuffer<T> {
  const buffer: T[] = [];
  let dropped = 0;
  /** The batch being written: still unwritten until its write resolves. */
  let writing = 0;
  let failing = false;
  let started = false;
  let closed = false;
  /** Failed writes in a row: the wait before the next try doubles with each. */
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  const run = () => {
    running ??= writeSome().finally(() => (running = undefined));
    return running;
  };

  const schedule = (ms: number) => {
    if (timer || closed || !started) return;
    timer = setTimeout(() => {
      timer = undefined;
      void run();
    }, ms);
    timer.unref();
  };

  const writeBatch: (batch: readonly T[]) => Promise<IsolatedResult<T>> = createIsolatingWriter(options.write, options.isolation);

  const writeSome = async (): Promise<void> => {
    while (buffer.length > 0) {
      const batch = buffer.splice(0, options.batchSize);
      writing = batch.length;
      try {
        const result = await writeBatch(batch);
        writing = 0;
        options.onEvent({ type: "written", written: result.written, duplicates: result.duplicates });
        if (result.deadLettered.length > 0) options.onEvent({ type: "dead_lettered", letters: result.deadLettered.map((l) => ({ id: l.id, code: l.code })) });
        if (failing) options.onEvent({ type: "recovered" });
        failing = false;
        failures = 0;
        if (result.kept.length > 0) {
          // Refused records wait at the front, in order, for the next flush (not this instant: a refusal repeats).
          buffer.unshift(...result.kept);
          options.onEvent({ type: "refused", count: result.kept.length });
          schedule(options.flushMs);
          return;
        }
      } catch (error) {
        writing = 0;
        buffer.unshift(...batch);
        failing = true;
        options.onEvent({ type: "failed", cause: causeOf(error), waiting: buffer.length });
        failures++;
        schedule(backoffDelay(failures, { baseMs: options.flushMs, maxMs: MAX_BACKOFF_MS }));
        return;
      }
    }
  };

  return {
    add(item) {
      if (buffer.length + writing >= options.maxBuffered) {
        dropped++;
        options.onEvent({ type: "dropped", count: 1, total: dropped });
        return false;
      }
      buffer.push(item);
      if (!failing) schedule(options.flushMs);
      return true;
    },
    start() {
      started = true;
      if (buffer.length > 0) schedule(options.flushMs);
    },
    get waiting() {
      return buffer.length + writing;
    },
    async flush() {
      await running;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await run();
    },
    async close(graceMs) {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await settleWithin(
        (async () => {
          await running;
          if (buffer.length > 0) await run();
        })(),
        graceMs,
      );
      return buffer.length + writing;
    },
  };
}
