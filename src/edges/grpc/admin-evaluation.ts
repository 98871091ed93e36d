import { create } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  type AdminService,
  AnswerStatsSchema,
  CandidateReportSchema,
  CreateDatasetResponseSchema,
  GetEvaluationReportResponseSchema,
  GetShadowReportResponseSchema,
  StartEvaluationResponseSchema,
} from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { GatewayError } from "../../core/errors.js";
import type { AnswerStats, CandidateComparison } from "../../evaluation/evaluation-report.js";
import type { Evaluations } from "../../evaluation/evaluations.js";
import type { ShadowRunner } from "../../evaluation/shadow.js";

type Guard = <R>(work: () => Promise<R>) => (ctx: HandlerContext) => Promise<R>;
type Impl = Omit<ServiceImpl<typeof AdminService>, "watchStats">;

const OFF = () => new GatewayError("failed_precondition", "evaluation replay is not served by this gateway");

function statsOf(s: AnswerStats) {
  return create(AnswerStatsSchema, {
    requests: s.requests,
    answered: s.answered,
    errors: s.errors,
    errorRate: s.errorRate,
    inputTokens: BigInt(s.inputTokens),
    outputTokens: BigInt(s.outputTokens),
    costUsdMicros: BigInt(s.costMicros),
    ttftP50Ms: s.ttftMs.p50,
    ttftP95Ms: s.ttftMs.p95,
    durationP50Ms: s.durationMs.p50,
    durationP95Ms: s.durationMs.p95,
    finishReasons: { ...s.finishReasons },
  });
}

function candidateOf(c: CandidateComparison & { readonly alias: string; readonly batchId?: string; readonly batchStatus?: string }) {
  return create(CandidateReportSchema, {
    alias: c.alias,
    batchId: c.batchId ?? "",
    batchStatus: c.batchStatus ?? "",
    stats: statsOf(c.stats),
    exactMatchRate: c.exactMatchRate,
    ...(c.toolCallAgreement === undefined ? {} : { toolCallAgreement: c.toolCallAgreement }),
    toolCallCases: c.toolCallCases,
    ...(c.jsonValidRate === undefined ? {} : { jsonValidRate: c.jsonValidRate }),
    jsonCases: c.jsonCases,
    ...(c.semanticSimilarity === undefined ? {} : { semanticSimilarity: c.semanticSimilarity }),
    semanticCases: c.semanticCases ?? 0,
  });
}

/** AdminService's CreateDataset, StartEvaluation, GetEvaluationReport and GetShadowReport (docs/evaluation.md). */
export function evaluationHandlers(evaluations: Evaluations | undefined, shadow: ShadowRunner | undefined, guard: Guard): Pick<Impl, "createDataset" | "startEvaluation" | "getEvaluationReport" | "getShadowReport"> {
  const need = () => {
    if (!evaluations) throw OFF();
    return evaluations;
  };
  return {
    createDataset: (req, ctx) =>
      guard(async () => {
        const made = await need().createDataset({
          name: req.name,
          alias: req.alias,
          ...(req.start ? { startMs: timestampMs(req.start) } : {}),
          ...(req.end ? { endMs: timestampMs(req.end) } : {}),
          ...(req.tag ? { tag: req.tag } : {}),
          ...(req.limit > 0 ? { limit: req.limit } : {}),
          description: req.description,
        });
        return create(CreateDatasetResponseSchema, made);
      })(ctx),
    startEvaluation: (req, ctx) =>
      guard(async () => {
        const started = await need().start({ dataset: req.dataset, candidates: req.candidates, ...(req.key ? { key: req.key } : {}) });
        return create(StartEvaluationResponseSchema, { evaluationId: started.id, batches: { ...started.batches }, size: started.size });
      })(ctx),
    getEvaluationReport: (req, ctx) =>
      guard(async () => {
        const report = await need().report(req.evaluationId, req.embeddingModel ? { embeddingModel: req.embeddingModel } : {});
        return create(GetEvaluationReportResponseSchema, {
          evaluationId: report.id,
          dataset: report.dataset,
          finished: report.finished,
          recorded: statsOf(report.recorded),
          candidates: report.candidates.map(candidateOf),
        });
      })(ctx),
    getShadowReport: (req, ctx) =>
      guard(async () => {
        if (!shadow) throw OFF();
        if (req.alias === "") throw new GatewayError("invalid_request", "alias: required", { field: "alias" });
        const report = await shadow.report(req.alias, { ...(req.start ? { startMs: timestampMs(req.start) } : {}), ...(req.end ? { endMs: timestampMs(req.end) } : {}) });
        return create(GetShadowReportResponseSchema, { alias: report.alias, live: statsOf(report.live), candidates: report.candidates.map(candidateOf) });
      })(ctx),
  };
}
