import { checkClientText } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";
import { bounded, type Database } from "../db/database.js";
import type { AuditRow } from "./audit-chain.js";
import type { AuditOutcome } from "./audit-event.js";
import { AUDIT_COLUMNS, type AuditDbRow, auditRowOf } from "./audit-store.js";

/** Which events to list; every field narrows, absent ones do not. */
export interface AuditFilter {
  readonly action?: string;
  readonly actorId?: string;
  readonly target?: string;
  readonly outcome?: AuditOutcome;
  /** Epoch ms, inclusive. */
  readonly since?: number;
  /** Epoch ms, exclusive. */
  readonly until?: number;
}

export interface AuditPageRequest {
  /** 1 to MAX_AUDIT_PAGE_SIZE; absent or 0: DEFAULT_AUDIT_PAGE_SIZE. */
  readonly size?: number;
  /** The `nextToken` of the page before; absent or "": the newest page. */
  readonly token?: string;
}

export interface AuditPage {
  /** Newest first. */
  readonly rows: readonly AuditRow[];
  /** Absent on the last page. */
  readonly nextToken?: string;
}

export const MAX_AUDIT_PAGE_SIZE = 1_000;
export const DEFAULT_AUDIT_PAGE_SIZE = 100;
/** Longest a listing may run in the database before it is cancelled there. */
export const LIST_TIMEOUT_MS = 10_000;

function invalid(field: string, why: string): GatewayError {
  return new GatewayError("invalid_request", `${field}: ${why}`, { field });
}

/**
 * A page token is the seq the page ended at: pages are read below it, so
 * events appended meanwhile never shift a page or repeat a row (no
 * OFFSET). Tokens are opaque to callers; the encoding may change.
 */
export function auditPageToken(lastSeq: number): string {
  return Buffer.from(String(lastSeq)).toString("base64url");
}

function seqOfToken(token: string): number {
  const text = Buffer.from(token.slice(0, 32), "base64url").toString("utf8");
  if (/^[1-9][0-9]{0,15}$/.test(text)) return Number(text);
  throw invalid("page_token", "not a token this service gave");
}

/** One page of the log, newest first; throws `invalid_request` for a bad size, time or token. */
export async function listAudit(db: Pick<Database, "transaction">, filter: AuditFilter, page: AuditPageRequest = {}): Promise<AuditPage> {
  const size = page.size === undefined || page.size === 0 ? DEFAULT_AUDIT_PAGE_SIZE : page.size;
  if (!Number.isInteger(size) || size < 1 || size > MAX_AUDIT_PAGE_SIZE) throw invalid("page_size", `1 to ${MAX_AUDIT_PAGE_SIZE}`);
  const params: unknown[] = [];
  const where: string[] = [];
  const add = (condition: (p: string) => string, value: unknown) => {
    params.push(value);
    where.push(condition(`$${params.length}`));
  };
  const time = (field: "since" | "until", ms: number | undefined, condition: (p: string) => string) => {
    if (ms === undefined) return;
    if (!Number.isFinite(ms) || ms < 0 || ms > 8.64e15) throw invalid(field, "not a time");
    add(condition, new Date(ms).toISOString());
  };
  if (page.token !== undefined && page.token !== "") add((p) => `seq < ${p}`, seqOfToken(page.token));
  for (const [field, value] of [
    ["filter.action", filter.action],
    ["filter.actor_id", filter.actorId],
    ["filter.target", filter.target],
  ] as const) {
    // The log holds no control character (audit-event.ts cleans them): a filter with one finds nothing, and a NUL would be a 500.
    if (value !== undefined) checkClientText(value, field);
  }
  if (filter.action !== undefined) add((p) => `action = ${p}`, filter.action);
  if (filter.actorId !== undefined) add((p) => `actor_id = ${p}`, filter.actorId);
  if (filter.target !== undefined) add((p) => `target = ${p}`, filter.target);
  if (filter.outcome !== undefined) add((p) => `outcome = ${p}`, filter.outcome);
  time("since", filter.since, (p) => `at >= ${p}::timestamptz`);
  time("until", filter.until, (p) => `at < ${p}::timestamptz`);
  params.push(size + 1);
  const sql = `SELECT ${AUDIT_COLUMNS} FROM sluice_audit ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY seq DESC LIMIT $${params.length}`;
  const result = await bounded(db, LIST_TIMEOUT_MS, (query) => query<AuditDbRow>(sql, params));
  const rows = result.rows.slice(0, size).map(auditRowOf);
  const last = rows.at(-1);
  return result.rows.length > size && last !== undefined ? { rows, nextToken: auditPageToken(last.seq) } : { rows };
}
