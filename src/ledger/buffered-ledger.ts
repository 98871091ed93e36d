import type { Database } from "../db/database.js";
import type { BatchResult } from "../drain/batch-writer.js";
import { DEAD_LETTER_TRIES, writeDeadLetters } from "../drain/dead-letters.js";
import { createRetryingBuffer, type RetryingBuffer } from "../drain/retrying-buffer.js";
import type { UsageRecord } from "../usage/usage-record.js";
import type { LedgerEvent } from "./ledger-events.js";
import { insertRows, rowOf } from "./ledger-rows.js";

export interface BufferedLedgerOptions {
  /** The database once it is open; the records wait in the buffer until then. */
  readonly database: () => Promise<Database>;
  readonly bufferMax: number;
  readonly batchSize: number;
  readonly flushMs: number;
  readonly onEvent: (event: LedgerEvent) => void;
}

/**
 * The ledger of a replica without Redis: each record this replica settles
 * goes into a bounded buffer written in batches off the request path
 * (drain/retrying-buffer.ts: a failed batch goes back to the front and is
 * tried again with backoff, so order and count are kept; past `bufferMax`
 * records are dropped and counted). It writes from the first record, not
 * from the ledger's start(): `database()` is what waits for the database
 * to open. A record from before records carried an id is keyed by its
 * place in the batch, which a retry keeps (the batch goes back whole).
 */
export function createBufferedLedger(options: BufferedLedgerOptions): RetryingBuffer<UsageRecord> {
  const write = async (batch: readonly UsageRecord[]): Promise<BatchResult> => {
    const written = await insertRows(
      await options.database(),
      batch.map((r, i) => rowOf(r, `${r.requestId}:${r.at}:${i}`)),
    );
    return { written, duplicates: batch.length - written };
  };
  const isolation = {
    idOf: (r: UsageRecord) => r.id ?? `${r.requestId}:${r.at}`,
    payloadOf: (r: UsageRecord) => JSON.stringify(r),
    maxTries: DEAD_LETTER_TRIES,
    deadLetter: async (letters: Parameters<typeof writeDeadLetters>[2]) => writeDeadLetters(await options.database(), "ledger", letters),
  };
  const buffer = createRetryingBuffer<UsageRecord>({ maxBuffered: options.bufferMax, batchSize: options.batchSize, flushMs: options.flushMs, write, isolation, onEvent: options.onEvent });
  buffer.start();
  return buffer;
}
