import type { WriterEvent } from "../drain/batch-writer.js";

/** What the ledger reports, for logs and metrics (ledger.ts turns them into both): its writers' events, and the retention's. */
export type LedgerEvent =
  | WriterEvent
  /** Rows past ledger.retentionDays removed. */
  | { readonly type: "expired"; readonly count: number };
