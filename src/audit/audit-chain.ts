import { createHash } from "node:crypto";
import type { AuditEvent } from "./audit-event.js";

/** One stored event: its place in the log and its link to the one before. */
export interface AuditRow {
  /** 1, 2, 3…, with no gaps: a missing number is a deleted row. */
  readonly seq: number;
  readonly event: AuditEvent;
  /** The hash of row `seq - 1` (GENESIS_HASH for the first). */
  readonly prevHash: string;
  /** hashOf(prevHash, this row). */
  readonly hash: string;
}

/** Where a chain, or the part of it still to check, begins: the seq it expects and the hash that row must point back to. */
export interface ChainPoint {
  readonly seq: number;
  readonly prevHash: string;
}

export const GENESIS_HASH = "0".repeat(64);
export const GENESIS: ChainPoint = { seq: 1, prevHash: GENESIS_HASH };

/**
 * How the chain broke at a seq. `missing`: no row has it (deleted).
 * `chain`: its prev hash is not the hash of the row before (that row, or
 * this link, was rewritten). `altered`: its content does not match its
 * own hash (edited in place).
 */
export type AuditBreakReason = "missing" | "chain" | "altered";

export interface AuditBreak {
  readonly seq: number;
  readonly reason: AuditBreakReason;
}

/**
 * A row as the text its hash covers: every stored field in a fixed order,
 * absent ones as null, details as [key, value] pairs in key order (a JSON
 * object's key order is not kept by jsonb, nor by JavaScript for keys like
 * "10"). The same text on every replica and at every later check.
 */
export function canonicalRow(row: Pick<AuditRow, "seq" | "event">): string {
  const e = row.event;
  const details = Object.entries(e.details ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([row.seq, e.id, e.at, e.actor.kind, e.actor.id, e.actor.remote ?? null, e.action, e.target ?? null, e.outcome, e.requestId ?? null, details.length === 0 ? null : details]);
}

/** SHA-256 (hex) over the previous row's hash and this row's canonical text: editing, removing or reordering any row changes every hash after it. */
export function hashOf(prevHash: string, row: Pick<AuditRow, "seq" | "event">): string {
  return createHash("sha256").update(prevHash).update(canonicalRow(row)).digest("hex");
}

/** Events linked on from `from`, in the order given: the rows to append. */
export function chainEvents(events: readonly AuditEvent[], from: ChainPoint): AuditRow[] {
  let prevHash = from.prevHash;
  return events.map((event, i) => {
    const seq = from.seq + i;
    const hash = hashOf(prevHash, { seq, event });
    const row = { seq, event, prevHash, hash };
    prevHash = hash;
    return row;
  });
}

/** What a walk over rows found: how many were intact, where the next row must continue, and the first break. */
export interface RowsCheck {
  readonly checked: number;
  /** After the last intact row: the seq and prev hash the next row must have. */
  readonly next: ChainPoint;
  readonly firstBreak?: AuditBreak;
}

/**
 * Walks rows (in seq order) from `from` and stops at the first break. The
 * checks go in the order that names the damage: a seq jump is a deleted
 * row (reported at the first missing seq), then the link to the row
 * before, then the row's own content. Pages are checked by passing each
 * page the previous one's `next`.
 */
export function verifyRows(rows: readonly AuditRow[], from: ChainPoint = GENESIS): RowsCheck {
  let next = from;
  let checked = 0;
  for (const row of rows) {
    if (row.seq !== next.seq) return { checked, next, firstBreak: { seq: Math.min(row.seq, next.seq), reason: row.seq > next.seq ? "missing" : "chain" } };
    if (row.prevHash !== next.prevHash) return { checked, next, firstBreak: { seq: row.seq, reason: "chain" } };
    if (hashOf(row.prevHash, row) !== row.hash) return { checked, next, firstBreak: { seq: row.seq, reason: "altered" } };
    checked++;
    next = { seq: row.seq + 1, prevHash: row.hash };
  }
  return { checked, next };
}
