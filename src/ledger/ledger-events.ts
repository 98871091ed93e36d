/** What a ledger writer reports, for logs and metrics (ledger.ts turns them into both). */
export type LedgerEvent =
  /** Rows written (`written` new, the rest already there: a batch written twice). */
  | { readonly type: "written"; readonly written: number; readonly duplicates: number }
  /** A batch could not be written; it waits and is tried again. */
  | { readonly type: "failed"; readonly cause: string; readonly waiting: number }
  /** Writing works again after failures. */
  | { readonly type: "recovered"; readonly waiting: number }
  /** Records that could not be kept for the ledger (a full buffer, or entries Redis trimmed before any replica wrote them), counted. */
  | { readonly type: "dropped"; readonly count: number; readonly total: number }
  /** Entries taken over from a replica that stopped before acknowledging them. */
  | { readonly type: "claimed"; readonly count: number }
  /** Rows past ledger.retentionDays removed. */
  | { readonly type: "expired"; readonly count: number };

/** Backoff after a failed write: doubles from the flush interval up to this. */
export const MAX_BACKOFF_MS = 5_000;
