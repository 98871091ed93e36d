import type { Database } from "../db/database.js";
import type { UsageRecord } from "../store/tenant-store.js";

/** Columns of sluice_ledger written per record, in insert order (db/migrations.ts, version 3). */
const COLUMNS = [
  "id",
  "at",
  "request_id",
  "key_name",
  "team",
  "business_line",
  "tags",
  "alias",
  "target",
  "input_tokens",
  "cached_input_tokens",
  "output_tokens",
  "reasoning_tokens",
  "cost_micros",
  "estimated",
  "cache",
  "saved_micros",
  "ttft_ms",
  "duration_ms",
  "outcome",
  "error_code",
  "replica",
] as const;

/** Rows per INSERT at most: PostgreSQL takes at most 65,535 parameters in one statement. */
export const MAX_ROWS_PER_INSERT = Math.floor(65_535 / COLUMNS.length);

/** A record as the ledger row's values; `fallbackId` keys a record written before records carried an id. */
export function rowOf(record: UsageRecord, fallbackId: string): unknown[] {
  return [
    record.id ?? fallbackId,
    new Date(record.at).toISOString(),
    record.requestId,
    record.key,
    record.team ?? null,
    record.businessLine ?? null,
    JSON.stringify(record.tags ?? {}),
    record.alias,
    record.target,
    record.inputTokens,
    record.cachedInputTokens,
    record.outputTokens,
    record.reasoningTokens,
    record.costMicros,
    record.estimated,
    record.cache ?? null,
    record.savedMicros ?? 0,
    record.ttftMs ?? null,
    record.durationMs,
    record.outcome,
    record.code ?? null,
    record.replica ?? null,
  ];
}

/**
 * Writes rows, once each: a row whose id is in the ledger already is
 * skipped, so a batch written again (retried after a timeout that hid a
 * commit, or claimed from a replica that died before acknowledging it)
 * changes nothing. One statement per MAX_ROWS_PER_INSERT rows. Resolves
 * with the rows that were new.
 */
export async function insertRows(db: Pick<Database, "query">, rows: readonly unknown[][]): Promise<number> {
  let written = 0;
  for (let start = 0; start < rows.length; start += MAX_ROWS_PER_INSERT) {
    const batch = rows.slice(start, start + MAX_ROWS_PER_INSERT);
    const params: unknown[] = [];
    const tuples = batch.map((row) => {
      const first = params.length;
      params.push(...row);
      return `(${row.map((_, i) => `$${first + i + 1}${COLUMNS[i] === "tags" ? "::jsonb" : ""}`).join(", ")})`;
    });
    const result = await db.query<{ id: string }>(`INSERT INTO sluice_ledger (${COLUMNS.join(", ")}) VALUES ${tuples.join(", ")} ON CONFLICT (id) DO NOTHING RETURNING id`, params);
    written += result.rows.length;
  }
  return written;
}

/** Removes rows older than `days`, a bounded number per call (a sweep never holds the table long). Resolves with how many went. */
export async function expireRows(db: Pick<Database, "query">, days: number, limit = 10_000): Promise<number> {
  const result = await db.query<{ id: string }>(
    `DELETE FROM sluice_ledger WHERE id IN (SELECT id FROM sluice_ledger WHERE at < now() - make_interval(days => $1) LIMIT $2) RETURNING id`,
    [days, limit],
  );
  return result.rows.length;
}

/** Refusals counted since the last write, by UTC day, key, level and reason. */
export interface RefusalCount {
  readonly day: string;
  readonly key: string;
  readonly level: string;
  readonly reason: string;
  readonly count: number;
}

/** Adds counts to this replica's rows of sluice_ledger_refusals, in one statement. */
export async function addRefusals(db: Pick<Database, "query">, replica: string, counts: readonly RefusalCount[]): Promise<void> {
  if (counts.length === 0) return;
  const params: unknown[] = [replica];
  const tuples = counts.map((c) => {
    params.push(c.day, c.key, c.level, c.reason, c.count);
    const n = params.length;
    return `($${n - 4}::date, $${n - 3}, $${n - 2}, $${n - 1}, $1, $${n})`;
  });
  await db.query(
    `INSERT INTO sluice_ledger_refusals (day, key_name, level, reason, replica, count) VALUES ${tuples.join(", ")} ON CONFLICT (day, key_name, level, reason, replica) DO UPDATE SET count = sluice_ledger_refusals.count + excluded.count`,
    params,
  );
}
