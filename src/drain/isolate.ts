import type { BatchResult } from "./batch-writer.js";
import { refusalCode } from "./refusal.js";

/** A record the database refused `tries` times: kept aside, never retried, named by its id. */
export interface DeadLetter {
  readonly id: string;
  /** The last refusal's SQLSTATE (never its message, which may quote the record). */
  readonly code: string;
  /** The record as JSON, for an operator to read and repair. */
  readonly payload: string;
}

export interface Isolation<T> {
  /** The record's id (a stream entry's id, an event's id): what the dead-letter row and the log line name. */
  readonly idOf: (item: T) => string;
  readonly payloadOf: (item: T) => string;
  /** Refusals of one record before it is dead-lettered. */
  readonly maxTries: number;
  /**
   * Keeps refused records aside (a table of their own), once each;
   * resolves with the ids it had not kept before (another writer may have
   * kept the same record: it is counted once). A failure leaves them
   * waiting, to be tried again.
   */
  readonly deadLetter: (letters: readonly DeadLetter[]) => Promise<ReadonlySet<string>>;
}

/** A batch's write, the refused records isolated. */
export interface IsolatedResult<T> extends BatchResult {
  /** Records refused fewer than `maxTries` times: they wait to be tried again (their batch's good records landed). */
  readonly kept: readonly T[];
  /** Records refused for good, newly kept aside (to be counted); every refused-for-good record is treated as written. */
  readonly deadLettered: readonly DeadLetter[];
}

/** Records whose refusals are counted at most; past it the oldest count is forgotten (that record starts again from one). */
const MAX_TRACKED = 10_000;

/**
 * A batch writer that one bad record cannot stop. The batch is written
 * whole; when the database refuses it for a record's fault (refusalCode),
 * it is written again one record at a time, so every good record lands
 * and each bad one is named. A record refused `maxTries` times (over as
 * many drains: a refusal that passes is not a poison) goes to the
 * dead-letter sink and counts as done; until then it is `kept`. An outage
 * (any other failure) throws, as before: the batch waits whole, and the
 * writes being idempotent, its records already written stay one row.
 */
export function createIsolatingWriter<T>(write: (batch: readonly T[]) => Promise<BatchResult>, isolation: Isolation<T>): (batch: readonly T[]) => Promise<IsolatedResult<T>> {
  const tries = new Map<string, number>();
  const refused = (id: string): number => {
    const n = (tries.get(id) ?? 0) + 1;
    tries.delete(id);
    tries.set(id, n);
    if (tries.size > MAX_TRACKED) tries.delete(tries.keys().next().value!);
    return n;
  };

  return async (batch) => {
    try {
      return { ...(await write(batch)), kept: [], deadLettered: [] };
    } catch (error) {
      if (refusalCode(error) === undefined) throw error;
    }
    let written = 0;
    let duplicates = 0;
    const kept: T[] = [];
    const letters: DeadLetter[] = [];
    for (const item of batch) {
      const id = isolation.idOf(item);
      try {
        const result = await write([item]);
        written += result.written;
        duplicates += result.duplicates;
        tries.delete(id);
      } catch (error) {
        const code = refusalCode(error);
        if (code === undefined) throw error;
        if (refused(id) >= isolation.maxTries) letters.push({ id, code, payload: isolation.payloadOf(item) });
        else kept.push(item);
      }
    }
    let newlyKept = letters;
    if (letters.length > 0) {
      const fresh = await isolation.deadLetter(letters);
      for (const letter of letters) tries.delete(letter.id);
      newlyKept = letters.filter((l) => fresh.has(l.id));
    }
    return { written, duplicates, kept, deadLettered: newlyKept };
  };
}
