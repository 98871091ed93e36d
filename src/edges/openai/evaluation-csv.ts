import type { AnswerStats } from "../../evaluation/evaluation-report.js";
import type { EvaluationReport, Evaluations } from "../../evaluation/evaluations.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf } from "../../http/node-http.js";
import type { KeyAdmin } from "../../tenancy/key-admin.js";
import { sendOpenAiError } from "./http-errors.js";
import { csvField } from "./spend-csv.js";

const HEADER = [
  "side",
  "batch_id",
  "batch_status",
  "requests",
  "answered",
  "errors",
  "error_rate",
  "input_tokens",
  "output_tokens",
  "cost_usd",
  "ttft_p50_ms",
  "ttft_p95_ms",
  "duration_p50_ms",
  "duration_p95_ms",
  "finish_reasons",
  "exact_match_rate",
  "tool_call_agreement",
  "tool_call_cases",
  "json_valid_rate",
  "json_cases",
  "semantic_similarity",
  "semantic_cases",
];

const fixed = (n: number, digits = 3) => n.toFixed(digits);

function statsCells(s: AnswerStats): string[] {
  const reasons = Object.entries(s.finishReasons)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([reason, n]) => `${reason}:${n}`)
    .join(" ");
  return [
    String(s.requests),
    String(s.answered),
    String(s.errors),
    fixed(s.errorRate, 4),
    String(s.inputTokens),
    String(s.outputTokens),
    (s.costMicros / 1_000_000).toFixed(6),
    fixed(s.ttftMs.p50),
    fixed(s.ttftMs.p95),
    fixed(s.durationMs.p50),
    fixed(s.durationMs.p95),
    csvField(reasons),
  ];
}

/** The report as CSV: the recorded baseline first, then one row per candidate (the columns GetEvaluationReport has). */
export function evaluationCsv(report: EvaluationReport): string {
  const rows = [
    ["recorded", "", "", ...statsCells(report.recorded), "", "", "", "", "", "", ""].join(","),
    ...report.candidates.map((c) =>
      [
        csvField(c.alias),
        c.batchId,
        c.batchStatus,
        ...statsCells(c.stats),
        fixed(c.exactMatchRate, 4),
        c.toolCallAgreement === undefined ? "" : fixed(c.toolCallAgreement, 4),
        String(c.toolCallCases),
        c.jsonValidRate === undefined ? "" : fixed(c.jsonValidRate, 4),
        String(c.jsonCases),
        c.semanticSimilarity === undefined ? "" : fixed(c.semanticSimilarity, 4),
        c.semanticCases === undefined ? "" : String(c.semanticCases),
      ].join(","),
    ),
  ];
  return `${[HEADER.join(","), ...rows].join("\r\n")}\r\n`;
}

/** GET /admin/v1/evaluations/{id}/report.csv[?embedding_model=alias]: GetEvaluationReport for spreadsheets, with the admin key. */
export async function evaluationCsvRoute(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: { readonly admin: KeyAdmin; readonly evaluations: Evaluations }, id: string): Promise<void> {
  try {
    options.admin.authorize(headerOf(req, "authorization"));
    const embeddingModel = new URL(req.url ?? "/", "http://x").searchParams.get("embedding_model");
    const body = evaluationCsv(await options.evaluations.report(id, embeddingModel ? { embeddingModel } : {}));
    exchange.code = "ok";
    res.writeHead(200, { "content-type": "text/csv; charset=utf-8", "content-length": String(Buffer.byteLength(body)), "content-disposition": `attachment; filename="${id.replace(/[^A-Za-z0-9_-]/g, "")}.csv"` });
    res.end(body);
  } catch (error) {
    sendOpenAiError(res, exchange, error);
  }
}
