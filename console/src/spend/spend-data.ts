import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Budget, type GetSpendReportResponse, SpendDimension, type SpendReportRow } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { admin } from "../api.js";
import type { Gauge } from "./budget-gauges.js";
import { budgetPeriod, PERIOD_WORDS, periodStart } from "./periods.js";
import type { StackedSeries } from "./spend-chart.js";

export type Range = "24h" | "7d" | "30d";
export type Grouping = "business_line" | "team";

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const RANGE_MS: Record<Range, number> = { "24h": DAY_MS, "7d": 7 * DAY_MS, "30d": 30 * DAY_MS };
/** Groups drawn apart in the chart; the rest are summed as "other". */
const MAX_GROUPS = 7;

export interface Ranked {
  readonly name: string;
  readonly requests: number;
  readonly costMicros: number;
}

export interface SpendData {
  readonly series: StackedSeries;
  readonly topKeys: readonly Ranked[];
  readonly topAliases: readonly Ranked[];
  /** MCP tool calls by tool (`<server>_<tool>`), with their server. */
  readonly topTools: readonly (Ranked & { readonly server: string })[];
  /** Of the totals, what MCP tool calls spent (their per-call prices). */
  readonly tools: { readonly requests: number; readonly costMicros: number };
  readonly totals: { readonly requests: number; readonly costMicros: number; readonly savedMicros: number };
  readonly gauges: readonly Gauge[];
  readonly thresholds: readonly number[];
}

/** Every row of a report, page after page (the console's reports are small: a group per bucket). */
async function allRows(request: Parameters<typeof admin.getSpendReport>[0]): Promise<{ rows: SpendReportRow[]; last: GetSpendReportResponse }> {
  const rows: SpendReportRow[] = [];
  let last: GetSpendReportResponse;
  let pageToken = "";
  do {
    last = await admin.getSpendReport({ ...request, pageSize: 1_000, pageToken });
    rows.push(...last.rows);
    pageToken = last.nextPageToken;
  } while (pageToken !== "" && rows.length < 20_000);
  return { rows, last };
}

function ranked(rows: readonly SpendReportRow[], dimension: string): Ranked[] {
  return rows
    .map((r) => ({ name: r.group[dimension] ?? "", requests: Number(r.requests), costMicros: Number(r.costUsdMicros) }))
    .sort((a, b) => b.costMicros - a.costMicros || a.name.localeCompare(b.name))
    .slice(0, 10);
}

/** Buckets of the range (hours for a day, days beyond), and each group's spend in them: the largest groups apart, the rest as "other". */
function stacked(rows: readonly SpendReportRow[], grouping: Grouping, bucket: "hour" | "day", startMs: number, endMs: number): StackedSeries {
  const step = bucket === "hour" ? HOUR_MS : DAY_MS;
  const first = Math.floor(startMs / step) * step;
  const x: number[] = [];
  for (let t = first; t < endMs; t += step) x.push(t / 1000);
  const index = (label: string) => Math.round((Date.parse(bucket === "day" ? `${label}T00:00:00Z` : label) - first) / step);
  const totals = new Map<string, number>();
  for (const r of rows) totals.set(r.group[grouping] ?? "", (totals.get(r.group[grouping] ?? "") ?? 0) + Number(r.costUsdMicros));
  const names = [...totals.entries()].sort((a, b) => b[1] - a[1]).map(([name]) => name);
  const shown = names.length > MAX_GROUPS ? names.slice(0, MAX_GROUPS - 1) : names;
  const groups = new Map(shown.map((name) => [name, new Array<number>(x.length).fill(0)]));
  const other = new Array<number>(x.length).fill(0);
  for (const r of rows) {
    const i = index(r.group[bucket] ?? "");
    if (i < 0 || i >= x.length) continue;
    (groups.get(r.group[grouping] ?? "") ?? other)[i]! += Number(r.costUsdMicros);
  }
  return {
    x,
    groups: [...[...groups.entries()].map(([name, micros]) => ({ name, micros })), ...(names.length > shown.length ? [{ name: "other", micros: other }] : [])],
  };
}

interface Budgeted {
  readonly level: Gauge["level"];
  readonly name: string;
  readonly budget: Budget;
}

const DIMENSION_OF: Record<Gauge["level"], SpendDimension> = { key: SpendDimension.KEY, team: SpendDimension.TEAM, business_line: SpendDimension.BUSINESS_LINE };

/** Each budget with what its current period spent, read from the ledger: one report per level and period kind in use. */
async function gauges(now: number): Promise<Gauge[]> {
  const [keys, teams, lines] = await Promise.all([admin.listKeys({}), admin.listTeams({}), admin.listBusinessLines({})]);
  const budgeted: Budgeted[] = [
    ...lines.businessLines.flatMap((l) => (l.budget ? [{ level: "business_line" as const, name: l.name, budget: l.budget }] : [])),
    ...teams.teams.flatMap((t) => (t.budget ? [{ level: "team" as const, name: t.name, budget: t.budget }] : [])),
    ...keys.keys.flatMap((k) => (k.budget ? [{ level: "key" as const, name: k.name, budget: k.budget }] : [])),
  ];
  const spent = new Map<string, number>();
  const asked = new Set<string>();
  for (const b of budgeted) {
    const period = budgetPeriod(b.budget.period);
    const ask = `${b.level}:${period}`;
    if (asked.has(ask)) continue;
    asked.add(ask);
    const { rows } = await allRows({ start: timestampFromMs(periodStart(period, now)), end: timestampFromMs(now + 60_000), groupBy: [DIMENSION_OF[b.level]] });
    const column = b.level;
    for (const r of rows) spent.set(`${ask}:${r.group[column] ?? ""}`, Number(r.costUsdMicros));
  }
  return budgeted.map((b) => {
    const period = budgetPeriod(b.budget.period);
    return { level: b.level, name: b.name, period: PERIOD_WORDS[period], budgetMicros: Number(b.budget.usdMicros), spentMicros: spent.get(`${b.level}:${period}:${b.name}`) ?? 0 };
  });
}

/** What the Spend page shows for a range and grouping, read from GetSpendReport and the admin lists. */
export async function loadSpend(range: Range, grouping: Grouping, now = Date.now()): Promise<SpendData> {
  const startMs = now - RANGE_MS[range];
  const endMs = now + 60_000;
  const window = { start: timestampFromMs(startMs), end: timestampFromMs(endMs) };
  const bucket = range === "24h" ? "hour" : "day";
  const [series, byKey, byAlias, byTool, total, levels] = await Promise.all([
    allRows({ ...window, groupBy: [grouping === "team" ? SpendDimension.TEAM : SpendDimension.BUSINESS_LINE, bucket === "hour" ? SpendDimension.HOUR : SpendDimension.DAY] }),
    allRows({ ...window, groupBy: [SpendDimension.KEY] }),
    // Aliases are models': a tool call's row names its tool there too, which the tools table shows with its server.
    allRows({ ...window, groupBy: [SpendDimension.ALIAS], filter: { kinds: ["model"] } }),
    allRows({ ...window, groupBy: [SpendDimension.TOOL_SERVER, SpendDimension.TOOL], filter: { kinds: ["tool"] } }),
    allRows(window),
    gauges(now),
  ]);
  const t = total.rows[0];
  const servers = new Map(byTool.rows.map((r) => [r.group.tool ?? "", r.group.tool_server ?? ""]));
  return {
    series: stacked(series.rows, grouping, bucket, startMs, endMs),
    topKeys: ranked(byKey.rows, "key"),
    topAliases: ranked(byAlias.rows, "alias"),
    topTools: ranked(byTool.rows, "tool").map((r) => ({ ...r, server: servers.get(r.name) ?? "" })),
    tools: { requests: byTool.rows.reduce((n, r) => n + Number(r.requests), 0), costMicros: byTool.rows.reduce((n, r) => n + Number(r.costUsdMicros), 0) },
    totals: { requests: Number(t?.requests ?? 0n), costMicros: Number(t?.costUsdMicros ?? 0n), savedMicros: Number(t?.savedUsdMicros ?? 0n) },
    gauges: levels,
    thresholds: total.last.alertThresholds,
  };
}
