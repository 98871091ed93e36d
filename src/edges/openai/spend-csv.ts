import { GatewayError } from "../../core/errors.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf } from "../../http/node-http.js";
import { MAX_PAGE_SIZE, SPEND_DIMENSIONS, type SpendDimension, type SpendQuery, type SpendRow } from "../../ledger/spend-report.js";
import type { SpendReports } from "../../ledger/spend-reports.js";
import type { KeyAdmin } from "../../tenancy/key-admin.js";
import { sendOpenAiError } from "./http-errors.js";

/** Rows one CSV holds at most: a spreadsheet's worth; a wider report is narrowed by its range or filters. */
export const MAX_CSV_ROWS = 100_000;
/** Longest query string read. */
const MAX_QUERY_CHARS = 8_192;

const FILTERS = { business_line: "businessLines", team: "teams", key: "keys", alias: "aliases", target: "targets" } as const;

function invalid(field: string, why: string): GatewayError {
  return new GatewayError("invalid_request", `${field}: ${why}`, { field });
}

/** The query string as a report query, every value checked as GetSpendReport checks its own. */
export function csvQuery(search: string): Omit<SpendQuery, "offset" | "pageSize"> {
  if (search.length > MAX_QUERY_CHARS) throw invalid("query", `at most ${MAX_QUERY_CHARS} characters`);
  const params = new URLSearchParams(search);
  const time = (name: string) => {
    const value = params.get(name);
    const ms = value === null ? Number.NaN : Date.parse(value);
    if (Number.isNaN(ms)) throw invalid(name, "an RFC 3339 time is required (2026-12-01T00:00:00Z)");
    return ms;
  };
  const groupBy = (params.get("group_by") ?? "")
    .split(",")
    .map((d) => d.trim())
    .filter(Boolean)
    .map((d) => {
      if (!(SPEND_DIMENSIONS as readonly string[]).includes(d)) throw invalid("group_by", `one of ${SPEND_DIMENSIONS.join(", ")}`);
      return d as SpendDimension;
    });
  const filter: Record<string, unknown> = {};
  for (const [param, field] of Object.entries(FILTERS)) {
    const values = params.getAll(param);
    if (values.length > 0) filter[field] = values;
  }
  const tags: Record<string, string> = {};
  for (const pair of params.getAll("tag")) {
    const colon = pair.indexOf(":");
    if (colon <= 0) throw invalid("tag", "write key:value");
    tags[pair.slice(0, colon)] = pair.slice(colon + 1);
  }
  if (Object.keys(tags).length > 0) filter.tags = tags;
  const tagKey = params.get("group_by_tag");
  return { startMs: time("start"), endMs: time("end"), groupBy, ...(tagKey ? { tagKey } : {}), filter: filter as SpendQuery["filter"] };
}

/** A CSV field: quoted when it must be, and never read as a formula by a spreadsheet. */
export function csvField(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\n\r]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** The figure columns after the group columns, in csvLine's order (docs/tenancy.md, "Reports", says what each holds). */
export const SPEND_CSV_FIGURES = [
  "requests",
  "input_tokens",
  "cached_input_tokens",
  "output_tokens",
  "reasoning_tokens",
  "cost_usd",
  "saved_usd",
  "errors",
  "estimated_requests",
  // Added after the others, so that readers by position keep working.
  "cache_write_5m_tokens",
  "cache_write_1h_tokens",
  "cost_usd_exact",
] as const;

const usd = (micros: number) => (micros / 1_000_000).toFixed(6);

function csvLine(columns: readonly string[], row: SpendRow): string {
  return [
    ...columns.map((c) => csvField(row.group[c] ?? "")),
    row.requests,
    row.inputTokens,
    row.cachedInputTokens,
    row.outputTokens,
    row.reasoningTokens,
    usd(row.costMicros),
    usd(row.savedMicros),
    row.errors,
    row.estimatedRequests,
    row.cacheWrite5mTokens,
    row.cacheWrite1hTokens,
    row.costUsd,
  ].join(",");
}

/**
 * GET /admin/v1/spend.csv: a spend report for spreadsheets, with the same
 * parameters as GetSpendReport (docs/tenancy.md, "Reports") and the admin
 * key. Every page is read (up to MAX_CSV_ROWS rows) before the response
 * starts, so a failure is an error status, never half a file.
 */
export async function spendCsv(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: { readonly admin: KeyAdmin; readonly reports: SpendReports }): Promise<void> {
  try {
    options.admin.authorize(headerOf(req, "authorization"));
    const url = req.url ?? "";
    const base = csvQuery(url.includes("?") ? url.slice(url.indexOf("?") + 1) : "");
    const rows: SpendRow[] = [];
    for (let offset: number | undefined = 0; offset !== undefined; ) {
      const page = await options.reports.report({ ...base, pageSize: MAX_PAGE_SIZE, offset });
      rows.push(...page.rows);
      if (rows.length > MAX_CSV_ROWS) throw invalid("query", `the report has more than ${MAX_CSV_ROWS} rows: narrow its range or filters, or page through GetSpendReport`);
      offset = page.nextOffset;
    }
    // A key, team or business line has its id beside its name: two of one name are two rows.
    const columns = base.groupBy.flatMap((d) => (d === "tag" ? [`tag:${base.tagKey}`] : d === "key" || d === "team" || d === "business_line" ? [d, `${d}_id`] : [d]));
    const header = [...columns.map(csvField), ...SPEND_CSV_FIGURES].join(",");
    const body = `${[header, ...rows.map((r) => csvLine(columns, r))].join("\r\n")}\r\n`;
    exchange.code = "ok";
    res.writeHead(200, { "content-type": "text/csv; charset=utf-8", "content-length": String(Buffer.byteLength(body)), "content-disposition": 'attachment; filename="spend.csv"' });
    res.end(body);
  } catch (error) {
    sendOpenAiError(res, exchange, error);
  }
}
