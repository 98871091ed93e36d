import type { Meter } from "@opentelemetry/api";
import { DEAD_LETTER_TRIES, deadLetterCounter } from "../drain/dead-letters.js";
import { refusalCode } from "../drain/refusal.js";
import type { Logger } from "../logging/logger.js";
import type { BatchStore, LineResult, PendingLine } from "./batch-store.js";

/** What writing a line's result came to. */
export interface LineWrite {
  /** False: the line had a result already (a job run twice). */
  readonly written: boolean;
  /** The database refused the result; the line got an error result instead, and the result is in the dead letters. */
  readonly deadLettered: boolean;
}

/** The result a line gets when the database refused its own: an error line of the Batch API's shape, naming the dead letter. */
export function unstoredResult(line: PendingLine): LineResult {
  const error = { code: "result_not_stored", message: "the answer to this line could not be stored (the database refused it); an operator finds it in sluice_dead_letters" };
  return { ok: false, text: JSON.stringify({ id: null, custom_id: line.customId, response: null, error }) };
}

/**
 * Writes a line's result so that one the database refuses never stops
 * its batch: a refusal (drain/refusal.ts) is tried again a few times, then
 * the result goes to the dead letters (named `<batch>:<line number>`: a
 * custom_id is the client's text, never logged), the
 * line gets an error result (`result_not_stored`), counted and logged by
 * its ids only, and the batch goes on. The call behind the line was paid
 * for, so it is never run again for this. Any other failure (the database
 * away) is thrown to the runner, whose outage policy holds.
 */
export function createLineWriter(options: { readonly store: BatchStore; readonly logger: Logger; readonly meter?: Meter }): (batchId: string, line: PendingLine, result: LineResult) => Promise<LineWrite> {
  const count = deadLetterCounter(options.meter, "batch");
  return async (batchId, line, result) => {
    let code = "";
    for (let attempt = 1; attempt <= DEAD_LETTER_TRIES; attempt++) {
      try {
        return { written: await options.store.finishLine(batchId, line.customId, result), deadLettered: false };
      } catch (error) {
        const refused = refusalCode(error);
        if (refused === undefined) throw error;
        code = refused;
      }
    }
    const id = `${batchId}:${line.line}`;
    // Counted once: a line run twice (a job retried after a replica died) may have been kept aside already.
    if ((await options.store.deadLetter([{ id, code, payload: result.text }])).size > 0) {
      count(1);
      options.logger.error({ event: "batch.dead_lettered", entryId: id, code });
    }
    return { written: await options.store.finishLine(batchId, line.customId, unstoredResult(line)), deadLettered: true };
  };
}
