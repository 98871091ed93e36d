import { bounded, type Database } from "../db/database.js";
import type { ToolCallOutcome } from "./contract.js";
import type { RecentToolCall } from "./recent-calls.js";

/** A page's read of the ledger may hold a connection this long at most. */
const READ_TIMEOUT_MS = 2_000;

interface ToolRow extends Record<string, unknown> {
  readonly at: Date | string;
  readonly key_id: string | null;
  readonly key_name: string;
  readonly tool_server: string | null;
  readonly alias: string;
  readonly outcome: string;
  readonly error_code: string | null;
  readonly duration_ms: number | string;
  readonly result_bytes: number | string | null;
  readonly cost_micros: number | string;
}

const TOOL_OUTCOMES: ReadonlySet<string> = new Set<ToolCallOutcome>(["ok", "tool_error", "failed", "timeout", "canceled", "too_large"]);

/** A tool row keeps the stream outcome (`completed`, `failed`, `canceled`) and, for anything but ok, the tool's outcome as its error code (accounting/tool-record.ts). */
function toolOutcome(row: ToolRow): ToolCallOutcome {
  if (row.error_code !== null && TOOL_OUTCOMES.has(row.error_code)) return row.error_code as ToolCallOutcome;
  return row.outcome === "completed" ? "ok" : row.outcome === "canceled" ? "canceled" : "failed";
}

/**
 * The latest tool calls from the ledger's `kind = 'tool'` rows: every
 * replica's, as the database has them (written in batches, so the newest
 * few seconds may not be there yet). `alias` holds the exposed tool name
 * on tool rows; how a call came (`via`) is not kept there.
 */
export function ledgerToolCalls(database: () => Promise<Database>): (count: number) => Promise<RecentToolCall[]> {
  return async (count) => {
    const db = await database();
    const { rows } = await bounded(db, READ_TIMEOUT_MS, (query) =>
      query<ToolRow>("SELECT at, key_id, key_name, tool_server, alias, outcome, error_code, duration_ms, result_bytes, cost_micros FROM sluice_ledger WHERE kind = 'tool' ORDER BY at DESC LIMIT $1", [count]),
    );
    return rows.map((r) => ({
      at: new Date(r.at).getTime(),
      ...(r.key_id ? { keyId: r.key_id } : {}),
      ...(r.key_name ? { keyName: r.key_name } : {}),
      server: r.tool_server ?? "",
      tool: r.alias,
      outcome: toolOutcome(r),
      durationMs: Number(r.duration_ms),
      resultBytes: Number(r.result_bytes ?? 0),
      priceUsd: Number(r.cost_micros) / 1_000_000,
    }));
  };
}
