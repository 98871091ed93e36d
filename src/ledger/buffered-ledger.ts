import type { Database } from "../db/database.js";
import type { UsageRecord } from "../store/tenant-store.js";
import { insertRows, rowOf } from "./ledger-rows.js";
import { type LedgerEvent, MAX_BACKOFF_MS } from "./ledger-events.js";

export interface BufferedLedgerOptions {
  /** The database once it is open; the records wait in the buffer until then. */
  readonly database: () => Promise<Database>;
  readonly bufferMax: number;
  readonly batchSize: number;
  readonly flushMs: number;
  readonly onEvent: (event: LedgerEvent) => void;
}

export interface BufferedLedger {
  add(record: UsageRecord): void;
  /** Records not yet written. */
  readonly waiting: number;
  /** Writes what waits now, without waiting for the interval (rejects with the database's error). */
  flush(): Promise<void>;
  /** Writes what it can within `graceMs`; resolves with what is left unwritten. */
  close(graceMs: number): Promise<number>;
}

/**
 * The ledger of a replica without Redis: each record this replica settles
 * goes into a bounded buffer, written in batches off the request path.
 * While the database is away (or still opening) records wait; a batch
 * that fails is put back at the front and tried again with backoff, so
 * order and count are kept. Past `bufferMax` new records are dropped and
 * counted, never the process's memory.
 */
export function createBufferedLedger(options: BufferedLedgerOptions): BufferedLedger {
  const buffer: UsageRecord[] = [];
  let dropped = 0;
  let failing = false;
  let backoffMs = options.flushMs;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let closed = false;

  const schedule = (ms: number) => {
    if (timer || closed) return;
    timer = setTimeout(() => {
      timer = undefined;
      running ??= writeSome().finally(() => (running = undefined));
    }, ms);
    timer.unref();
  };

  const writeSome = async (): Promise<void> => {
    while (buffer.length > 0) {
      const batch = buffer.splice(0, options.batchSize);
      try {
        const db = await options.database();
        const written = await insertRows(db, batch.map((r, i) => rowOf(r, `${r.requestId}:${r.at}:${i}`)));
        options.onEvent({ type: "written", written, duplicates: batch.length - written });
        if (failing) options.onEvent({ type: "recovered", waiting: buffer.length });
        failing = false;
        backoffMs = options.flushMs;
      } catch (error) {
        buffer.unshift(...batch);
        failing = true;
        options.onEvent({ type: "failed", cause: error instanceof Error ? error.message.slice(0, 200) : "unknown", waiting: buffer.length });
        backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
        if (!closed) schedule(backoffMs);
        return;
      }
    }
  };

  return {
    add(record) {
      if (buffer.length >= options.bufferMax) {
        dropped++;
        options.onEvent({ type: "dropped", count: 1, total: dropped });
        return;
      }
      buffer.push(record);
      if (!failing) schedule(options.flushMs);
    },
    get waiting() {
      return buffer.length;
    },
    async flush() {
      await running;
      if (timer) clearTimeout(timer);
      timer = undefined;
      running ??= writeSome().finally(() => (running = undefined));
      await running;
    },
    async close(graceMs) {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      let deadline: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (deadline = setTimeout(resolve, graceMs)));
      await Promise.race([(async () => {
        await running;
        if (buffer.length > 0) await writeSome();
      })(), late]);
      clearTimeout(deadline);
      return buffer.length;
    },
  };
}
