import { createHash } from "node:crypto";
import { checkClientText } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";
import { bounded, type Database } from "../db/database.js";

/**
 * What a report can group by: a level, a key, what was asked and what
 * served, a UTC day or hour, one tag, or what kind of call it was (`model`
 * or `tool`) and, for MCP tool calls, their server and exposed tool name
 * (model rows group under '').
 */
export const SPEND_DIMENSIONS = ["business_line", "team", "key", "alias", "target", "day", "hour", "tag", "kind", "tool_server", "tool"] as const;
export type SpendDimension = (typeof SPEND_DIMENSIONS)[number];

/** One report request, as every surface (gRPC, CSV) asks it. */
export interface SpendQuery {
  readonly startMs: number;
  readonly endMs: number;
  readonly groupBy: readonly SpendDimension[];
  /** The tag key grouped by (`tag` in groupBy). */
  readonly tagKey?: string;
  readonly filter: {
    readonly businessLines?: readonly string[];
    readonly teams?: readonly string[];
    readonly keys?: readonly string[];
    readonly aliases?: readonly string[];
    readonly targets?: readonly string[];
    readonly tags?: Readonly<Record<string, string>>;
    /** `model`, `tool`. */
    readonly kinds?: readonly string[];
  };
  readonly pageSize: number;
  /** Rows of the grouped result to skip (the page token). */
  readonly offset: number;
}

/** A group's totals; `group` holds one value per dimension grouped by (empty string: none, e.g. a key without a team). */
export interface SpendRow {
  readonly group: Readonly<Record<string, string>>;
  readonly requests: number;
  readonly inputTokens: number;
  readonly cachedInputTokens: number;
  /** Input tokens written to the provider's cache for five minutes and for an hour (Anthropic bills them above input). */
  readonly cacheWrite5mTokens: number;
  readonly cacheWrite1hTokens: number;
  readonly outputTokens: number;
  readonly reasoningTokens: number;
  /** The sum of each call's cost rounded up to a micro-dollar: what budgets counted. */
  readonly costMicros: number;
  /** The exact cost in US dollars, a decimal string (rows from before the exact cost count at their rounded cost). */
  readonly costUsd: string;
  readonly savedMicros: number;
  readonly errors: number;
  readonly estimatedRequests: number;
}

export interface SpendPage {
  readonly rows: readonly SpendRow[];
  /** The offset of the next page; absent on the last. */
  readonly nextOffset?: number;
}

/** The widest time range one report may cover: a report reads every row of its range, so the range is its bound. */
export const MAX_REPORT_DAYS = 400;
export const MAX_PAGE_SIZE = 1_000;
export const DEFAULT_PAGE_SIZE = 100;
/** Values per filter list at most (they become query parameters). */
const MAX_FILTER_VALUES = 100;
/** Longest a report query may run in the database before it is cancelled there. */
export const REPORT_TIMEOUT_MS = 10_000;

const DAY_MS = 86_400_000;

function invalid(field: string, why: string): GatewayError {
  return new GatewayError("invalid_request", `${field}: ${why}`, { field });
}

/**
 * A query's bounds checked before any SQL runs: a range of at most
 * MAX_REPORT_DAYS, each dimension once, a tag key when grouping by tag
 * (and only an allowed one: reports group by what auth.tagKeys allows),
 * bounded filter lists and page size.
 */
export function checkSpendQuery(query: SpendQuery, allowedTags: ReadonlySet<string>): SpendQuery {
  if (!Number.isFinite(query.startMs) || !Number.isFinite(query.endMs)) throw invalid("start", "start and end are required");
  if (query.endMs <= query.startMs) throw invalid("end", "must be after start");
  if (query.endMs - query.startMs > MAX_REPORT_DAYS * DAY_MS) throw invalid("end", `a report covers at most ${MAX_REPORT_DAYS} days`);
  if (new Set(query.groupBy).size !== query.groupBy.length) throw invalid("group_by", "each dimension at most once");
  const byTag = query.groupBy.includes("tag");
  if (byTag && (query.tagKey === undefined || query.tagKey === "")) throw invalid("group_by_tag", "name the tag key to group by");
  if (query.tagKey !== undefined && query.tagKey !== "" && !allowedTags.has(query.tagKey)) throw invalid("group_by_tag", "not one of auth.tagKeys");
  for (const [name, list] of Object.entries(query.filter)) {
    const size = Array.isArray(list) ? list.length : Object.keys(list ?? {}).length;
    if (size > MAX_FILTER_VALUES) throw invalid(`filter.${name}`, `at most ${MAX_FILTER_VALUES} values`);
    // Names, tags and their keys reach the database as parameters: none may hold a control character (a NUL is a 500 there).
    const values = Array.isArray(list) ? (list as readonly string[]) : Object.entries(list ?? {}).flat();
    for (const value of values) checkClientText(value, `filter.${name}`);
  }
  if (query.tagKey !== undefined) checkClientText(query.tagKey, "group_by_tag");
  if (!Number.isInteger(query.pageSize) || query.pageSize < 1 || query.pageSize > MAX_PAGE_SIZE) throw invalid("page_size", `1 to ${MAX_PAGE_SIZE}`);
  if (!Number.isInteger(query.offset) || query.offset < 0) throw invalid("page_token", "not a token this service gave");
  return query;
}

/** What a report sums per group. */
const FIGURES = [
  "count(*) AS requests",
  "sum(input_tokens) AS input",
  "sum(cached_input_tokens) AS cached",
  "sum(cache_write_5m_tokens) AS written5m",
  "sum(cache_write_1h_tokens) AS written1h",
  "sum(output_tokens) AS output",
  "sum(reasoning_tokens) AS reasoning",
  "sum(cost_micros) AS cost",
  // Exact, in pico-dollars, as text: a sum past 2^53 stays exact on its way to the gateway.
  "sum(coalesce(cost_picos, cost_micros * 1000000))::text AS picos",
  "sum(saved_micros) AS saved",
  "count(*) FILTER (WHERE outcome = 'failed') AS errors",
  "count(*) FILTER (WHERE estimated) AS estimated",
];

/**
 * The SQL of a report: one GROUP BY over the ledger rows of the range,
 * every value a parameter (names and tags never reach the SQL text), in a
 * stable order so pages follow each other.
 */
export function spendSql(query: SpendQuery): { readonly sql: string; readonly params: unknown[] } {
  const params: unknown[] = [new Date(query.startMs).toISOString(), new Date(query.endMs).toISOString()];
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  const expression: Record<SpendDimension, () => string> = {
    business_line: () => "coalesce(business_line, '')",
    team: () => "coalesce(team, '')",
    key: () => "key_name",
    alias: () => "alias",
    target: () => "target",
    day: () => `to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
    hour: () => `to_char(date_trunc('hour', at AT TIME ZONE 'UTC'), 'YYYY-MM-DD"T"HH24":00Z"')`,
    tag: () => `coalesce(tags ->> ${param(query.tagKey)}, '')`,
    kind: () => "kind",
    tool_server: () => "coalesce(tool_server, '')",
    tool: () => "coalesce(tool_name, '')",
  };
  // A key, team or business line is grouped by its id as well as its name: two of one name (a revoked key's name
  // taken by a new key) are two rows, each saying its id. Rows written before ids have none ('').
  const ids: Partial<Record<SpendDimension, string>> = { key: "key_id", team: "team_id", business_line: "business_line_id" };
  const groups = query.groupBy.flatMap((d, i) => [`${expression[d]()} AS g${i}`, ...(ids[d] ? [`coalesce(${ids[d]}, '') AS i${i}`] : [])]);
  const where = ["at >= $1", "at < $2"];
  const list = (column: string, values: readonly string[] | undefined) => {
    if (values && values.length > 0) where.push(`${column} = ANY(${param([...values])})`);
  };
  list("business_line", query.filter.businessLines);
  list("team", query.filter.teams);
  list("key_name", query.filter.keys);
  list("alias", query.filter.aliases);
  list("target", query.filter.targets);
  list("kind", query.filter.kinds);
  for (const [key, value] of Object.entries(query.filter.tags ?? {})) where.push(`tags ->> ${param(key)} = ${param(value)}`);
  const keys = query.groupBy.flatMap((d, i) => [`g${i}`, ...(ids[d] ? [`i${i}`] : [])]);
  const sql = [
    `SELECT ${[...groups, ...FIGURES].join(", ")}`,
    `FROM sluice_ledger WHERE ${where.join(" AND ")}`,
    keys.length > 0 ? `GROUP BY ${keys.join(", ")} ORDER BY ${keys.join(", ")}` : "",
    `LIMIT ${param(query.pageSize + 1)} OFFSET ${param(query.offset)}`,
  ]
    .filter(Boolean)
    .join(" ");
  return { sql, params };
}

const n = (value: unknown) => Number(value ?? 0);

const PICOS_PER_USD = 1_000_000_000_000n;

/** Pico-dollars as exact US dollars: a decimal string without trailing zeros ("1.06376125", "0", "12"). */
export function usdOfPicos(picos: bigint): string {
  const whole = picos / PICOS_PER_USD;
  const fraction = (picos % PICOS_PER_USD).toString().padStart(12, "0").replace(/0+$/, "");
  return fraction === "" ? whole.toString() : `${whole}.${fraction}`;
}

/** Runs a checked report query, cancelled in the database past REPORT_TIMEOUT_MS: one page, and whether there is another. */
export async function spendReport(db: Pick<Database, "transaction">, query: SpendQuery): Promise<SpendPage> {
  const { sql, params } = spendSql(query);
  const result = await bounded(db, REPORT_TIMEOUT_MS, (q) => q<Record<string, unknown>>(sql, params));
  const rows = result.rows.slice(0, query.pageSize).map(
    (r): SpendRow => ({
      group: Object.fromEntries(query.groupBy.flatMap((d, i) => [[d === "tag" ? `tag:${query.tagKey}` : d, String(r[`g${i}`] ?? "")], ...(r[`i${i}`] === undefined ? [] : [[`${d}_id`, String(r[`i${i}`])]])])),
      requests: n(r.requests),
      inputTokens: n(r.input),
      cachedInputTokens: n(r.cached),
      cacheWrite5mTokens: n(r.written5m),
      cacheWrite1hTokens: n(r.written1h),
      outputTokens: n(r.output),
      reasoningTokens: n(r.reasoning),
      costMicros: n(r.cost),
      costUsd: usdOfPicos(typeof r.picos === "string" && /^\d+$/.test(r.picos) ? BigInt(r.picos) : 0n),
      savedMicros: n(r.saved),
      errors: n(r.errors),
      estimatedRequests: n(r.estimated),
    }),
  );
  return result.rows.length > query.pageSize ? { rows, nextOffset: query.offset + query.pageSize } : { rows };
}

/** What a page token must match: the query without its page, so a token is never used with another query. */
function fingerprint(query: SpendQuery): string {
  const { offset: _offset, pageSize: _size, ...rest } = query;
  return createHash("sha256").update(JSON.stringify(rest)).digest("base64url").slice(0, 16);
}

/** The token of the page at `offset` of `query`. */
export function pageToken(query: SpendQuery, offset: number): string {
  return Buffer.from(JSON.stringify({ o: offset, q: fingerprint(query) })).toString("base64url");
}

/** The offset a token stands for; throws `invalid_request` for a token of another query, or none of ours. */
export function offsetOfToken(query: Omit<SpendQuery, "offset">, token: string): number {
  if (token === "") return 0;
  try {
    const parsed = JSON.parse(Buffer.from(token.slice(0, 200), "base64url").toString("utf8")) as { o?: unknown; q?: unknown };
    if (typeof parsed.o === "number" && Number.isInteger(parsed.o) && parsed.o >= 0 && parsed.q === fingerprint({ ...query, offset: 0 })) return parsed.o;
  } catch {
    // reported below
  }
  throw invalid("page_token", "not a token of this query (ask again without one)");
}
