import { create } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { type GetSpendReportRequest, GetSpendReportResponseSchema, SpendDimension as ProtoDimension, SpendReportRowSchema } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { GatewayError } from "../../core/errors.js";
import { DEFAULT_PAGE_SIZE, offsetOfToken, pageToken, type SpendDimension, type SpendQuery } from "../../ledger/spend-report.js";
import type { SpendReports } from "../../ledger/spend-reports.js";

const DIMENSIONS: Partial<Record<ProtoDimension, SpendDimension>> = {
  [ProtoDimension.BUSINESS_LINE]: "business_line",
  [ProtoDimension.TEAM]: "team",
  [ProtoDimension.KEY]: "key",
  [ProtoDimension.ALIAS]: "alias",
  [ProtoDimension.TARGET]: "target",
  [ProtoDimension.DAY]: "day",
  [ProtoDimension.HOUR]: "hour",
  [ProtoDimension.TAG]: "tag",
  [ProtoDimension.KIND]: "kind",
  [ProtoDimension.TOOL_SERVER]: "tool_server",
  [ProtoDimension.TOOL]: "tool",
};

/** GetSpendReport's request as a report query (its bounds are checked by the reports). */
export function spendQueryOf(req: GetSpendReportRequest): SpendQuery {
  const groupBy = req.groupBy.map((d) => {
    const dimension = DIMENSIONS[d];
    if (!dimension) throw new GatewayError("invalid_request", "group_by: an unknown dimension", { field: "group_by" });
    return dimension;
  });
  const f = req.filter;
  const base = {
    startMs: req.start ? timestampMs(req.start) : Number.NaN,
    endMs: req.end ? timestampMs(req.end) : Number.NaN,
    groupBy,
    ...(req.groupByTag === "" ? {} : { tagKey: req.groupByTag }),
    filter: {
      ...(f?.businessLines.length ? { businessLines: f.businessLines } : {}),
      ...(f?.teams.length ? { teams: f.teams } : {}),
      ...(f?.keys.length ? { keys: f.keys } : {}),
      ...(f?.aliases.length ? { aliases: f.aliases } : {}),
      ...(f?.targets.length ? { targets: f.targets } : {}),
      ...(f && Object.keys(f.tags).length > 0 ? { tags: f.tags } : {}),
      ...(f?.kinds.length ? { kinds: f.kinds } : {}),
    },
    pageSize: req.pageSize === 0 ? DEFAULT_PAGE_SIZE : req.pageSize,
  };
  return { ...base, offset: offsetOfToken(base, req.pageToken) };
}

/** AdminService/GetSpendReport over the reports. */
export async function getSpendReport(reports: SpendReports, req: GetSpendReportRequest) {
  const query = spendQueryOf(req);
  const page = await reports.report(query);
  return create(GetSpendReportResponseSchema, {
    rows: page.rows.map((r) =>
      create(SpendReportRowSchema, {
        group: { ...r.group },
        requests: BigInt(r.requests),
        inputTokens: BigInt(r.inputTokens),
        cachedInputTokens: BigInt(r.cachedInputTokens),
        outputTokens: BigInt(r.outputTokens),
        reasoningTokens: BigInt(r.reasoningTokens),
        costUsdMicros: BigInt(r.costMicros),
        savedUsdMicros: BigInt(r.savedMicros),
        errors: BigInt(r.errors),
        estimatedRequests: BigInt(r.estimatedRequests),
        cacheWrite5mTokens: BigInt(r.cacheWrite5mTokens),
        cacheWrite1hTokens: BigInt(r.cacheWrite1hTokens),
        costUsd: r.costUsd,
      }),
    ),
    nextPageToken: page.nextOffset === undefined ? "" : pageToken(query, page.nextOffset),
    alertThresholds: [...reports.thresholds()],
  });
}
