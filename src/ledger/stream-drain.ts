import type { Database } from "../db/database.js";
import type { BatchResult } from "../drain/batch-writer.js";
import { DEAD_LETTER_TRIES, writeDeadLetters } from "../drain/dead-letters.js";
import { createGroupDrain, type GroupDrain, type StreamEntry } from "../drain/group-drain.js";
import type { SluiceRedisClient } from "../store/redis-connection.js";
import type { LedgerEvent } from "./ledger-events.js";
import { insertRows, rowOfEntry } from "./ledger-rows.js";

export interface StreamDrainOptions {
  readonly client: SluiceRedisClient;
  /** The usage stream (`<prefix>usage`). */
  readonly stream: string;
  readonly group: string;
  /** This replica's name in the group. */
  readonly consumer: string;
  readonly database: () => Promise<Database>;
  readonly batchSize: number;
  readonly flushMs: number;
  /** Entries another consumer read but has not acknowledged for this long are taken over (it died mid-batch). */
  readonly claimIdleMs: number;
  /** Bound on every Redis command. */
  readonly timeoutMs: number;
  readonly onEvent: (event: LedgerEvent) => void;
}

/**
 * The ledger's writer when replicas share Redis: every settle already
 * appends its record to the usage stream, and every replica drains that
 * stream as one consumer of one group (drain/group-drain.ts: read, claim
 * what a dead replica left, write, then acknowledge). What is the ledger's
 * own is the write: rows are keyed by the record's id (rowOfEntry), so an
 * entry written twice is one row, and the drain's exactly-once holds; an
 * entry the database refuses goes to the dead letters after a few tries.
 */
export function createStreamDrain(options: StreamDrainOptions): GroupDrain {
  const write = async (entries: readonly StreamEntry[]): Promise<BatchResult> => {
    const written = await insertRows(
      await options.database(),
      entries.map((e) => rowOfEntry(e.message, e.id)),
    );
    return { written, duplicates: entries.length - written };
  };
  // An entry the database refuses (a NUL in a tag, a number that is not one) is isolated, then dead-lettered: the usage
  // stream never waits behind it. It is named by its row's id; its fields are kept as JSON, as Redis held them.
  const isolation = {
    // The row's own id (the record's, as rowOfEntry keys it): this replica's copy of the record (ledger.ts) finds it there too.
    idOf: (e: StreamEntry) => e.message.id ?? `stream:${e.id}`,
    payloadOf: (e: StreamEntry) => JSON.stringify(e.message),
    maxTries: DEAD_LETTER_TRIES,
    deadLetter: async (letters: Parameters<typeof writeDeadLetters>[2]) => writeDeadLetters(await options.database(), "ledger", letters),
  };
  // "ledger" starts a Redis timeout's message (`ledger claim: no answer…`), as the ledger's logs have always said.
  return createGroupDrain({ ...options, label: "ledger", write, isolation });
}
