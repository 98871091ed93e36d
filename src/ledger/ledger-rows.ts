import { bounded, type Database } from "../db/database.js";
import { parseCounts, parseTags } from "../store/redis-tenant-store.js";
import type { UsageRecord } from "../usage/usage-record.js";

/** Longest a batch may take in the database before it is cancelled there (and tried again later). */
export const WRITE_TIMEOUT_MS = 30_000;

/**
 * One ledger row as it travels to the database: a JSON object whose
 * fields the INSERT reads with jsonb_to_recordset. Numbers may stay the
 * strings the usage stream holds: the database converts them.
 */
export interface LedgerRow {
  readonly id: string;
  /** Epoch ms. */
  readonly at: number | string;
  readonly request_id: string;
  readonly key_name: string;
  /** Who the key, team and business line were (ids never reused); null on rows of records written before ids. */
  readonly key_id: string | null;
  readonly team: string | null;
  readonly team_id: string | null;
  readonly business_line: string | null;
  readonly business_line_id: string | null;
  readonly tags: Readonly<Record<string, string>> | null;
  readonly alias: string;
  readonly target: string;
  readonly input_tokens: number | string;
  readonly cached_input_tokens: number | string;
  readonly cache_write_5m_tokens: number | string;
  readonly cache_write_1h_tokens: number | string;
  readonly output_tokens: number | string;
  readonly reasoning_tokens: number | string;
  /** Searches a hosted web search ran (priced per search); 0 on rows written before the column. */
  readonly web_searches: number | string;
  /** Upstream requests that answered (priced per request); 0 on rows written before the column. */
  readonly billed_requests: number | string;
  readonly cost_micros: number | string;
  /** The exact cost in pico-dollars (1e-12 USD); null on records written before it. */
  readonly cost_picos: number | string | null;
  readonly estimated: boolean | string;
  readonly cache: string | null;
  readonly saved_micros: number | string;
  readonly ttft_ms: number | string | null;
  readonly duration_ms: number | string;
  readonly outcome: string;
  readonly error_code: string | null;
  readonly replica: string | null;
  /** Served by a local target (docs/compliance.md, "Local targets"). */
  readonly local: boolean | string;
  /** Personal data found in the request, by detector (counts, never values); null when nothing was. */
  readonly pii: Readonly<Record<string, number>> | null;
  /** `model`, or `tool` for an MCP tool call (whose server, exposed name and result size follow; null on model rows). */
  readonly kind: "model" | "tool";
  readonly tool_server: string | null;
  readonly tool_name: string | null;
  readonly result_bytes: number | string | null;
}

/** A settled record as a row; `fallbackId` keys a record written before records carried an id. */
export function rowOf(record: UsageRecord, fallbackId: string): LedgerRow {
  return {
    id: record.id ?? fallbackId,
    at: record.at,
    request_id: record.requestId,
    key_name: record.key,
    key_id: record.keyId ?? null,
    team: record.team ?? null,
    team_id: record.teamId ?? null,
    business_line: record.businessLine ?? null,
    business_line_id: record.businessLineId ?? null,
    tags: record.tags ?? null,
    alias: record.alias,
    target: record.target,
    input_tokens: record.inputTokens,
    cached_input_tokens: record.cachedInputTokens,
    cache_write_5m_tokens: record.cacheWrite5mTokens ?? 0,
    cache_write_1h_tokens: record.cacheWrite1hTokens ?? 0,
    output_tokens: record.outputTokens,
    reasoning_tokens: record.reasoningTokens,
    web_searches: record.webSearches ?? 0,
    billed_requests: record.billedRequests ?? 0,
    cost_micros: record.costMicros,
    cost_picos: record.costPicos ?? null,
    estimated: record.estimated,
    cache: record.cache ?? null,
    saved_micros: record.savedMicros ?? 0,
    ttft_ms: record.ttftMs ?? null,
    duration_ms: record.durationMs,
    outcome: record.outcome,
    error_code: record.code ?? null,
    replica: record.replica ?? null,
    local: record.local === true,
    pii: record.pii && Object.keys(record.pii).length > 0 ? record.pii : null,
    kind: record.kind ?? "model",
    tool_server: record.tool?.server ?? null,
    tool_name: record.tool?.name ?? null,
    result_bytes: record.tool?.resultBytes ?? null,
  };
}

/**
 * A usage-stream entry straight to a row, its numbers left as the strings
 * Redis gave: the drain's per-record work is this and one JSON.stringify
 * per batch (bench 9b), not a record object and a row built from it.
 * The same fields as parseRecord (redis-tenant-store.ts) reads.
 */
export function rowOfEntry(fields: Readonly<Record<string, string>>, entryId: string): LedgerRow {
  const outcome = fields.outcome === "completed" || fields.outcome === "canceled" ? fields.outcome : "failed";
  return {
    id: fields.id ?? `stream:${entryId}`,
    at: fields.at ?? "0",
    request_id: fields.requestId ?? "",
    key_name: fields.key ?? "",
    key_id: fields.keyId ?? null,
    team: fields.team ?? null,
    team_id: fields.teamId ?? null,
    business_line: fields.businessLine ?? null,
    business_line_id: fields.businessLineId ?? null,
    tags: fields.tags === undefined ? null : parseTags(fields.tags),
    alias: fields.alias ?? "",
    target: fields.target ?? "",
    input_tokens: fields.inputTokens ?? "0",
    cached_input_tokens: fields.cachedInputTokens ?? "0",
    cache_write_5m_tokens: fields.cacheWrite5mTokens ?? "0",
    cache_write_1h_tokens: fields.cacheWrite1hTokens ?? "0",
    output_tokens: fields.outputTokens ?? "0",
    reasoning_tokens: fields.reasoningTokens ?? "0",
    web_searches: fields.webSearches ?? "0",
    billed_requests: fields.billedRequests ?? "0",
    cost_micros: fields.costMicros ?? "0",
    cost_picos: fields.costPicos ?? null,
    estimated: fields.estimated === "1",
    cache: fields.cache === "exact" || fields.cache === "semantic" ? fields.cache : null,
    saved_micros: fields.savedMicros ?? "0",
    ttft_ms: fields.ttftMs ?? null,
    duration_ms: fields.durationMs ?? "0",
    outcome,
    error_code: fields.code ?? null,
    replica: fields.replica ?? null,
    local: fields.local === "1",
    pii: fields.pii === undefined ? null : parseCounts(fields.pii),
    kind: fields.kind === "tool" ? "tool" : "model",
    tool_server: fields.kind === "tool" ? (fields.toolServer ?? "") : null,
    tool_name: fields.kind === "tool" ? (fields.toolName ?? "") : null,
    result_bytes: fields.kind === "tool" ? (fields.resultBytes ?? "0") : null,
  };
}

const COLUMNS: ReadonlyArray<readonly [keyof LedgerRow, string]> = [
  ["id", "text"],
  ["at", "double precision"],
  ["request_id", "text"],
  ["key_name", "text"],
  ["key_id", "text"],
  ["team", "text"],
  ["team_id", "text"],
  ["business_line", "text"],
  ["business_line_id", "text"],
  ["tags", "jsonb"],
  ["alias", "text"],
  ["target", "text"],
  ["input_tokens", "bigint"],
  ["cached_input_tokens", "bigint"],
  ["cache_write_5m_tokens", "bigint"],
  ["cache_write_1h_tokens", "bigint"],
  ["output_tokens", "bigint"],
  ["reasoning_tokens", "bigint"],
  ["web_searches", "bigint"],
  ["billed_requests", "bigint"],
  ["cost_micros", "bigint"],
  ["cost_picos", "bigint"],
  ["estimated", "boolean"],
  ["cache", "text"],
  ["saved_micros", "bigint"],
  ["ttft_ms", "real"],
  ["duration_ms", "real"],
  ["outcome", "text"],
  ["error_code", "text"],
  ["replica", "text"],
  ["local", "boolean"],
  ["pii", "jsonb"],
  ["kind", "text"],
  ["tool_server", "text"],
  ["tool_name", "text"],
  ["result_bytes", "bigint"],
];

const INSERT_SQL = [
  `WITH written AS (INSERT INTO sluice_ledger (${COLUMNS.map(([c]) => c).join(", ")})`,
  `SELECT ${COLUMNS.map(([c]) => (c === "at" ? "to_timestamp(r.at / 1000.0)" : c === "tags" ? "coalesce(r.tags, '{}'::jsonb)" : c === "local" ? "coalesce(r.local, false)" : c === "kind" ? "coalesce(r.kind, 'model')" : c === "cache_write_5m_tokens" || c === "cache_write_1h_tokens" || c === "web_searches" || c === "billed_requests" ? `coalesce(r.${c}, 0)` : `r.${c}`)).join(", ")}`,
  `FROM jsonb_to_recordset($1::jsonb) AS r(${COLUMNS.map(([c, type]) => `${c} ${type}`).join(", ")})`,
  "ON CONFLICT (id) DO NOTHING RETURNING 1) SELECT count(*)::int AS n FROM written",
].join(" ");

/**
 * Writes rows, once each: a row whose id is in the ledger already is
 * skipped, so a batch written again (retried after a timeout that hid a
 * commit, or claimed from a replica that died before acknowledging it)
 * changes nothing. A batch is one statement with one parameter, its rows
 * as JSON: the database unpacks them, so the gateway's driver serialises
 * one string instead of 22 values per row (bench 9b). Resolves with the
 * rows that were new.
 */
export async function insertRows(db: Pick<Database, "transaction">, rows: readonly LedgerRow[]): Promise<number> {
  if (rows.length === 0) return 0;
  const result = await bounded(db, WRITE_TIMEOUT_MS, (q) => q<{ n: number }>(INSERT_SQL, [JSON.stringify(rows)]));
  return Number(result.rows[0]?.n ?? 0);
}

/** The ids among `ids` that are rows of the ledger, or kept aside as dead letters. */
export async function presentIds(db: Pick<Database, "query">, ids: readonly string[]): Promise<ReadonlySet<string>> {
  if (ids.length === 0) return new Set();
  // A record refused for good is in the dead letters: seen there, it is no longer this replica's to write.
  const result = await db.query<{ id: string }>("SELECT id FROM sluice_ledger WHERE id = ANY($1::text[]) UNION SELECT entry_id FROM sluice_dead_letters WHERE source = 'ledger' AND entry_id = ANY($1::text[])", [ids]);
  return new Set(result.rows.map((r) => r.id));
}

/** Removes rows older than `days`, a bounded number per call (a sweep never holds the table long). Resolves with how many went. */
export async function expireRows(db: Pick<Database, "query">, days: number, limit = 10_000): Promise<number> {
  const result = await db.query<{ id: string }>(`DELETE FROM sluice_ledger WHERE id IN (SELECT id FROM sluice_ledger WHERE at < now() - make_interval(days => $1) LIMIT $2) RETURNING id`, [days, limit]);
  return result.rows.length;
}

/** Refusals counted since the last write, by UTC day, key, level and reason. */
export interface RefusalCount {
  readonly day: string;
  /** The key's name, and its id (who it was). */
  readonly key: string;
  readonly keyId: string;
  readonly level: string;
  readonly reason: string;
  readonly count: number;
}

/** Adds counts to this replica's rows of sluice_ledger_refusals, in one statement. */
export async function addRefusals(db: Pick<Database, "query">, replica: string, counts: readonly RefusalCount[]): Promise<void> {
  if (counts.length === 0) return;
  const params: unknown[] = [replica];
  const tuples = counts.map((c) => {
    params.push(c.day, c.keyId, c.key, c.level, c.reason, c.count);
    const n = params.length;
    return `($${n - 5}::date, $${n - 4}, $${n - 3}, $${n - 2}, $${n - 1}, $1, $${n})`;
  });
  await db.query(
    `INSERT INTO sluice_ledger_refusals (day, key_id, key_name, level, reason, replica, count) VALUES ${tuples.join(", ")} ON CONFLICT (day, key_id, key_name, level, reason, replica) DO UPDATE SET count = sluice_ledger_refusals.count + excluded.count`,
    params,
  );
}
