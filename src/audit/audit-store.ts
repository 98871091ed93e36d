import { bounded, type Database } from "../db/database.js";
import { type AuditBreak, type AuditRow, chainEvents, GENESIS, verifyRows } from "./audit-chain.js";
import type { AuditActor, AuditDetails, AuditEvent, AuditOutcome } from "./audit-event.js";

/** The columns a read selects, `at` as whole epoch ms (extract gives numeric: exact). */
export const AUDIT_COLUMNS = "seq, id::text AS id, round(extract(epoch FROM at) * 1000)::bigint AS at_ms, actor_kind, actor_id, remote, action, target, outcome, request_id, details, prev_hash, hash";

export interface AuditDbRow extends Record<string, unknown> {
  seq: string | number;
  id: string;
  at_ms: string | number;
  actor_kind: string;
  actor_id: string;
  remote: string | null;
  action: string;
  target: string | null;
  outcome: string;
  request_id: string | null;
  details: AuditDetails | null;
  prev_hash: string;
  hash: string;
}

/** A database row as read (bigints arrive as strings from `pg`, as numbers from PGlite). */
export function auditRowOf(r: AuditDbRow): AuditRow {
  const event: AuditEvent = {
    id: r.id,
    at: Number(r.at_ms),
    actor: { kind: r.actor_kind as AuditActor["kind"], id: r.actor_id, remote: r.remote ?? undefined },
    action: r.action,
    target: r.target ?? undefined,
    outcome: r.outcome as AuditOutcome,
    requestId: r.request_id ?? undefined,
    details: r.details ?? undefined,
  };
  return { seq: Number(r.seq), event, prevHash: r.prev_hash, hash: r.hash };
}

const INSERT_SQL = `INSERT INTO sluice_audit (seq, id, at, actor_kind, actor_id, remote, action, target, outcome, request_id, details, prev_hash, hash)
  SELECT r.seq, r.id, timestamptz 'epoch' + r.at * interval '1 millisecond', r.actor_kind, r.actor_id, r.remote, r.action, r.target, r.outcome, r.request_id, r.details, r.prev_hash, r.hash
  FROM jsonb_to_recordset($1::jsonb) AS r(seq bigint, id uuid, at bigint, actor_kind text, actor_id text, remote text, action text, target text, outcome text, request_id text, details jsonb, prev_hash text, hash text)`;

const rowJson = (row: AuditRow) => {
  const e = row.event;
  return {
    seq: row.seq,
    id: e.id,
    at: e.at,
    actor_kind: e.actor.kind,
    actor_id: e.actor.id,
    remote: e.actor.remote ?? null,
    action: e.action,
    target: e.target ?? null,
    outcome: e.outcome,
    request_id: e.requestId ?? null,
    details: e.details ?? null,
    prev_hash: row.prevHash,
    hash: row.hash,
  };
};

export interface AppendResult {
  /** Rows new in the log. */
  readonly written: number;
  /** Events that were there already (a batch written again) or twice in the batch. */
  readonly duplicates: number;
  /** The log's last seq after this append (0: empty). */
  readonly lastSeq: number;
}

/** The head and the last row, whichever is further on (rows past the head were not appended by Sluice; the chain goes on after them and verify judges them). */
const LAST_SQL = "SELECT seq, hash FROM (SELECT seq, hash FROM sluice_audit_head UNION ALL (SELECT seq, hash FROM sluice_audit ORDER BY seq DESC LIMIT 1)) AS last ORDER BY seq DESC LIMIT 1";

/**
 * Appends events to the chain in one transaction, cancelled in the
 * database past `timeoutMs`. Replicas append one at a time (a
 * transaction-scoped advisory lock), so each reads the true end and
 * numbers on from it: no gaps, no fork, no sequence whose rolled-back
 * numbers would look like deleted rows. The chain goes on from the head
 * (sluice_audit_head), so rows deleted from the end stay a gap. Events
 * whose id is in the log already are skipped: a batch written again after
 * a crash between the commit and its acknowledgement changes nothing.
 */
export async function appendAudit(db: Pick<Database, "transaction">, events: readonly AuditEvent[], timeoutMs: number): Promise<AppendResult> {
  const seen = new Set<string>();
  const unique = events.filter((e) => !seen.has(e.id) && seen.add(e.id));
  return bounded(db, timeoutMs, async (query) => {
    await query("SELECT pg_advisory_xact_lock(hashtext('sluice_audit'))");
    const present = new Set((await query<{ id: string }>("SELECT id::text AS id FROM sluice_audit WHERE id = ANY($1::uuid[])", [unique.map((e) => e.id)])).rows.map((r) => r.id));
    const last = (await query<{ seq: string | number; hash: string }>(LAST_SQL)).rows[0];
    const from = last === undefined ? GENESIS : { seq: Number(last.seq) + 1, prevHash: last.hash };
    const rows = chainEvents(
      unique.filter((e) => !present.has(e.id)),
      from,
    );
    const end = rows.at(-1);
    if (end !== undefined) {
      await query(INSERT_SQL, [JSON.stringify(rows.map(rowJson))]);
      await query("INSERT INTO sluice_audit_head (one, seq, hash) VALUES (true, $1, $2) ON CONFLICT (one) DO UPDATE SET seq = excluded.seq, hash = excluded.hash", [end.seq, end.hash]);
    }
    return { written: rows.length, duplicates: events.length - rows.length, lastSeq: end?.seq ?? from.seq - 1 };
  });
}

/** The ids among `ids` (UUIDs) that are in the log, or kept aside as dead letters. */
export async function presentAuditIds(db: Pick<Database, "query">, ids: readonly string[]): Promise<ReadonlySet<string>> {
  if (ids.length === 0) return new Set();
  // An event refused for good is in the dead letters: seen there, it is no longer this replica's to write.
  const result = await db.query<{ id: string }>("SELECT id::text AS id FROM sluice_audit WHERE id = ANY($1::uuid[]) UNION SELECT entry_id FROM sluice_dead_letters WHERE source = 'audit' AND entry_id = ANY($2::text[])", [ids, ids]);
  return new Set(result.rows.map((r) => r.id));
}

export interface AuditVerification {
  readonly ok: boolean;
  /** Rows found intact, from seq 1 on. */
  readonly checked: number;
  /** The last intact row's seq (0: none). */
  readonly lastSeq: number;
  /**
   * Its hash. Anyone who can write the database can also rewrite the whole
   * chain and its head consistently (the hashes have no key); a hash kept
   * elsewhere (a log line, a ticket) is what shows that later.
   */
  readonly lastHash: string;
  readonly firstBreak?: AuditBreak;
}

export interface VerifyOptions {
  /** Rows read per query: the table is walked, never loaded. */
  readonly pageSize?: number;
  /** Bound on each query in the database. */
  readonly timeoutMs?: number;
}

/**
 * Walks the whole log in seq order, a page at a time, and reports the
 * first break (audit-chain.ts); then a log that ends before its head lost
 * its last rows (`missing` at the first of them). The head is read after
 * the walk and the walk goes on to it: every row up to a head that was
 * read had been committed, so appends meanwhile are never taken for a
 * loss.
 */
export async function verifyAudit(db: Pick<Database, "transaction">, options: VerifyOptions = {}): Promise<AuditVerification> {
  const pageSize = options.pageSize ?? 5_000;
  const timeoutMs = options.timeoutMs ?? 10_000;
  let next = GENESIS;
  let checked = 0;
  /** Checks rows from `next` to the end as it is now; the first break, if any. */
  const walk = async (): Promise<AuditBreak | undefined> => {
    for (;;) {
      const page = await bounded(db, timeoutMs, (query) => query<AuditDbRow>(`SELECT ${AUDIT_COLUMNS} FROM sluice_audit WHERE seq >= $1 ORDER BY seq LIMIT $2`, [next.seq, pageSize]));
      const result = verifyRows(page.rows.map(auditRowOf), next);
      checked += result.checked;
      next = result.next;
      if (result.firstBreak || page.rows.length < pageSize) return result.firstBreak;
    }
  };
  const report = (firstBreak: AuditBreak | undefined): AuditVerification => ({ ok: firstBreak === undefined, checked, lastSeq: next.seq - 1, lastHash: next.prevHash, firstBreak });
  const broken = await walk();
  if (broken) return report(broken);
  const head = (await bounded(db, timeoutMs, (query) => query<{ seq: string | number }>("SELECT seq FROM sluice_audit_head"))).rows[0];
  const headSeq = Number(head?.seq ?? 0);
  if (headSeq < next.seq) return report(undefined);
  const later = await walk();
  return report(later ?? (headSeq >= next.seq ? { seq: next.seq, reason: "missing" } : undefined));
}
