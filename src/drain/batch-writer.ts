import { refusalCode } from "./refusal.js";

/**
 * What the two batch writers (retrying-buffer.ts, group-drain.ts) report,
 * and what they share. Their users (the spend ledger, the audit log) turn
 * the events into their own logs, metrics and stats, so the writers
 * themselves name no room and log nothing.
 */
export type WriterEvent =
  /** A batch went to the database: `written` new, `duplicates` there already. */
  | { readonly type: "written"; readonly written: number; readonly duplicates: number }
  /** A batch could not be written; it waits and is tried again. `waiting`: what waits in memory (-1: in Redis, uncounted). */
  | { readonly type: "failed"; readonly cause: string; readonly waiting: number }
  /** Writing works again after failures. */
  | { readonly type: "recovered" }
  /** Items that will never be written (a full buffer; entries Redis trimmed before any replica wrote them); `total` since start. */
  | { readonly type: "dropped"; readonly count: number; readonly total: number }
  /** Entries taken over from a replica that stopped before acknowledging them. */
  | { readonly type: "claimed"; readonly count: number }
  /** Records the database refused (their batch's good records landed); they wait to be tried again. */
  | { readonly type: "refused"; readonly count: number }
  /** Records refused too often, kept aside in the dead-letter table: the writer goes on without them. */
  | { readonly type: "dead_lettered"; readonly letters: ReadonlyArray<{ readonly id: string; readonly code: string }> };

/** What one batch write reports. */
export interface BatchResult {
  readonly written: number;
  readonly duplicates: number;
}

/** Backoff after a failed write: doubles from the flush interval up to this. */
export const MAX_BACKOFF_MS = 5_000;

/**
 * An error's message for a log line: short, and never the error object
 * (which may carry a query's parameters). A record the database refused
 * is named by its SQLSTATE only: the message may quote the record.
 */
export function causeOf(error: unknown): string {
  const code = refusalCode(error);
  if (code !== undefined) return `the database refused a record (SQLSTATE ${code})`;
  return error instanceof Error ? error.message.slice(0, 200) : "unknown";
}

/** Waits for `work` at most `graceMs` (a writer's close: what is not written by then stays unwritten, and says so). */
export async function settleWithin(work: Promise<unknown> | undefined, graceMs: number): Promise<void> {
  let deadline: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (deadline = setTimeout(resolve, graceMs)));
  await Promise.race([work, late]);
  clearTimeout(deadline);
}
