import type { AuditInput } from "../../audit/audit-event.js";
import type { Principal } from "../../tenancy/principal.js";
import type { ToolCallFacts, ToolCallSettlement } from "../contract.js";

/** Longest audited-arguments text kept (the audit log cuts every field at 512 characters; said here so the cut is deliberate). */
const MAX_AUDIT_ARGUMENT_CHARS = 512;

/** JSON of the redacted arguments a tool opted in to audit, cut to what the log keeps; never throws (a cycle or a BigInt reads as unserialisable). */
function auditedArguments(value: unknown): string {
  try {
    return (JSON.stringify(value) ?? "null").slice(0, MAX_AUDIT_ARGUMENT_CHARS);
  } catch {
    return "(unserialisable)";
  }
}

/**
 * The audit event of one settled tool call (`mcp.tool_call`), for the hash
 * chain: who (the key's id; its name in the details), which tool of which
 * server, the SHA-256 of the canonical arguments, the result size, the
 * outcome, where it came from, what it cost. Argument values only when
 * the tool opted in (`facts.auditArguments`, already PII-redacted);
 * otherwise none, and never the result.
 */
export function toolAuditEvent(input: {
  readonly principal: Principal | undefined;
  readonly facts: ToolCallFacts;
  readonly settlement: ToolCallSettlement;
  /** The ledger record's id: the event and the row name each other. */
  readonly recordId: string;
  readonly costMicros: number;
}): AuditInput {
  const { principal, facts, settlement } = input;
  const ok = settlement.outcome === "ok" || settlement.outcome === "tool_error";
  return {
    actor: principal ? { kind: "key", id: principal.id } : { kind: "anonymous", id: "" },
    action: "mcp.tool_call",
    target: facts.tool,
    outcome: ok ? "ok" : "failed",
    requestId: input.recordId,
    details: {
      ...(principal ? { key: principal.name } : {}),
      server: facts.server,
      tool: facts.upstreamTool,
      argumentsSha256: facts.argumentsSha256,
      ...(facts.auditArguments === undefined ? {} : { arguments: auditedArguments(facts.auditArguments) }),
      resultBytes: settlement.resultBytes,
      outcome: settlement.outcome,
      via: facts.via,
      durationMs: Math.round(settlement.durationMs),
      costMicros: input.costMicros,
      ...(facts.callId === undefined ? {} : { callId: facts.callId }),
    },
  };
}
