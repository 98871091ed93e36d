import type { StreamOutcome, UsageRecord } from "../../usage/usage-record.js";
import type { ToolCallFacts, ToolCallOutcome, ToolCallSettlement } from "../contract.js";
import type { ToolAdmission } from "./tool-charge.js";

/**
 * Whether a settled call is charged its price. A call the server never
 * answered (`failed`: unreachable, broken, its breaker open) is not, as a
 * model call no provider served costs nothing; every other outcome is:
 * the server ran the tool (its own error result, a timeout or a cancel
 * after it was sent, a result too large to pass on). A call refused before
 * it was forwarded is never admitted, so never settled.
 */
export const chargedOutcome = (outcome: ToolCallOutcome): boolean => outcome !== "failed";

const streamOutcomeOf = (outcome: ToolCallOutcome): StreamOutcome => (outcome === "ok" || outcome === "tool_error" ? "completed" : outcome === "canceled" ? "canceled" : "failed");

/**
 * A tool call's usage record (`kind: tool`), the same record a model call
 * settles with so that one path (the store's usage stream or this
 * replica's buffer, then the ledger) keeps both: alias is the exposed tool
 * name, target `<server>/<upstream tool>` (as `provider/model`), no
 * tokens, the price as the cost, and the tool's outcome as the error code
 * when it was not `ok`.
 */
export function toolRecord(input: {
  readonly id: string;
  readonly facts: ToolCallFacts;
  readonly settlement: ToolCallSettlement;
  readonly admission: ToolAdmission | undefined;
  readonly picos: number;
  readonly micros: number;
  readonly at: number;
  readonly replica?: string;
}): UsageRecord {
  const { facts, settlement, admission } = input;
  const principal = admission?.principal;
  const team = admission?.parents.find((p) => p.level === "team");
  const line = admission?.parents.find((p) => p.level === "business_line");
  const charged = chargedOutcome(settlement.outcome);
  return {
    id: input.id,
    requestId: facts.callId ?? input.id,
    key: principal?.name ?? "",
    ...(principal ? { keyId: principal.id } : {}),
    ...(team ? { team: team.name, teamId: team.id } : {}),
    ...(line ? { businessLine: line.name, businessLineId: line.id } : {}),
    alias: facts.tool,
    target: `${facts.server}/${facts.upstreamTool}`,
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
    reasoningTokens: 0,
    costMicros: charged ? input.micros : 0,
    costPicos: charged ? input.picos : 0,
    estimated: false,
    durationMs: settlement.durationMs,
    outcome: streamOutcomeOf(settlement.outcome),
    ...(settlement.outcome === "ok" ? {} : { code: settlement.outcome }),
    kind: "tool",
    tool: { server: facts.server, name: facts.tool, resultBytes: settlement.resultBytes },
    at: input.at,
    ...(input.replica === undefined ? {} : { replica: input.replica }),
  };
}
