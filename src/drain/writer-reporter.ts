import type { Meter } from "@opentelemetry/api";
import type { Logger } from "../logging/logger.js";
import type { WriterEvent } from "./batch-writer.js";
import { type DeadLetterSource, deadLetterCounter } from "./dead-letters.js";

/** Totals since start of one room's writes (`claimed`: with Redis, entries taken over from a stopped replica). */
export interface WriterTotals {
  readonly written: number;
  readonly duplicates: number;
  readonly dropped: number;
  readonly claimed: number;
  readonly failures: number;
  /** Refusals of an item by the database (each try counts). */
  readonly refused: number;
  /** Items refused too often, kept aside in sluice_dead_letters. */
  readonly deadLettered: number;
}

export interface WriterReporterOptions {
  /** Names the log lines (`<room>.write_failed`, `<room>.dropped`, …) and the dead-letter metric's writer. */
  readonly room: DeadLetterSource;
  /** The log field that carries a count of items: `events`, `records`. */
  readonly itemsField: string;
  readonly logger: Logger;
  readonly meter?: Meter | undefined;
  /** The room's own metrics, each optional: their names and labels are the room's. */
  readonly count?: {
    readonly written?: (n: number) => void;
    readonly duplicates?: (n: number) => void;
    readonly dropped?: (n: number) => void;
    readonly deadLettered?: (n: number) => void;
    readonly failure?: () => void;
  };
}

export interface WriterReporter {
  readonly totals: WriterTotals;
  /** Every source of one room (its buffer, its stream drain, its own drops) reports here, so there is one running total. */
  report(event: WriterEvent): void;
}

/** Drops are logged at the first and then every LOG_DROPS_EVERY-th, with the running total. */
const LOG_DROPS_EVERY = 1_000;

/**
 * What a room that writes in batches (the spend ledger, the audit log)
 * makes of its writers' events: totals, its metrics, and log lines that a
 * long outage does not flood (one per run of failures, drops every
 * thousandth). Dead letters are logged one line per item, named by id and
 * the database's code, never by content.
 */
export function createWriterReporter(options: WriterReporterOptions): WriterReporter {
  const { room, itemsField, logger } = options;
  const count = options.count ?? {};
  const totals = { written: 0, duplicates: 0, dropped: 0, claimed: 0, failures: 0, refused: 0, deadLettered: 0 };
  const countDeadLetters = deadLetterCounter(options.meter, room);
  let failing = false;

  const report = (event: WriterEvent) => {
    switch (event.type) {
      case "written":
        totals.written += event.written;
        totals.duplicates += event.duplicates;
        count.written?.(event.written);
        if (event.duplicates > 0) count.duplicates?.(event.duplicates);
        break;
      case "failed":
        totals.failures++;
        count.failure?.();
        // One line per run of failures: the database being away for a minute is one event.
        if (!failing) logger.warn({ event: `${room}.write_failed`, cause: event.cause, ...(event.waiting >= 0 ? { waiting: event.waiting } : {}) });
        failing = true;
        break;
      case "recovered":
        failing = false;
        logger.info({ event: `${room}.recovered` });
        break;
      case "dropped":
        totals.dropped += event.count;
        count.dropped?.(event.count);
        if (totals.dropped === event.count || Math.floor(totals.dropped / LOG_DROPS_EVERY) > Math.floor((totals.dropped - event.count) / LOG_DROPS_EVERY)) {
          logger.error({ event: `${room}.dropped`, [itemsField]: event.count, droppedTotal: totals.dropped });
        }
        break;
      case "claimed":
        totals.claimed += event.count;
        logger.info({ event: `${room}.claimed`, [itemsField]: event.count });
        break;
      case "refused":
        totals.refused += event.count;
        break;
      case "dead_lettered":
        totals.deadLettered += event.letters.length;
        count.deadLettered?.(event.letters.length);
        countDeadLetters(event.letters.length);
        for (const letter of event.letters) logger.error({ event: `${room}.dead_lettered`, entryId: letter.id, code: letter.code });
        break;
    }
  };
  return { totals, report };
}
