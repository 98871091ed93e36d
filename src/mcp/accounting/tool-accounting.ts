import { randomUUID } from "node:crypto";
import type { Meter, Span, Tracer } from "@opentelemetry/api";
import { type AuditTrail, NO_AUDIT } from "../../audit/audit-trail.js";
import type { Logger } from "../../logging/logger.js";
import type { Tenancy } from "../../tenancy/tenancy.js";
import { MCP_ERRORS, type McpCaller, McpError, type ToolAccounting, type ToolCallCharge, type ToolCallFacts, type ToolCallSettlement } from "../contract.js";
import { toolAuditEvent } from "./tool-audit.js";
import { admitTool, priceOf, releaseTool, settleTool, type ToolAdmission, ToolRefused } from "./tool-charge.js";
import { chargedOutcome, toolRecord } from "./tool-record.js";
import { endToolCall, startToolSpan, type ToolInstruments, toolInstruments } from "./tool-telemetry.js";

/** How long this replica renews a tool call's lease unless told otherwise: mcp.servers.*.maxTotalTimeoutMs's default, and then some. */
const DEFAULT_LONGEST_CALL_MS = 2 * 600_000;

/** What tool accounting is made of: the gateway's existing parts, none of them copied. */
export interface ToolAccountingParts {
  /** Limits, budgets and the ledger (through the store's settle); absent: calls are measured and audited, never admitted or recorded. */
  readonly tenancy?: Pick<Tenancy, "chargeDeps">;
  /** The hash-chained audit log (audit/audit-log.ts), or nothing while it is off. */
  readonly trail?: AuditTrail;
  readonly meter?: Meter;
  readonly tracer?: Tracer;
  readonly logger: Logger;
  /** The longest a call to `server` may run (its maxTotalTimeoutMs): how long its admission's lease is renewed. */
  readonly longestCallMs?: (server: string) => number;
}

const canceled = () => new McpError(MCP_ERRORS.internal, "the tool call was canceled", { status: 499, reason: "canceled" });

/**
 * A tool call's bookkeeping (contract.ts, ToolAccounting): `admit` counts
 * it against the key's, team's and business line's request limits and
 * reserves its price against their budgets, exactly as a model request is
 * admitted (tenancy's charge deps and refusal words; refused as McpError
 * `refused` with `data.status` 402 / 429); the charge it returns settles
 * once, whatever happened: the price spent (not for a call the server
 * never answered), a `kind: tool` ledger record through the same store
 * path as model records (buffered through Redis and database outages),
 * an audit event in the hash chain, metrics and the span. Without a
 * principal (authentication off) nothing is admitted, but the record, the
 * audit event, metrics and span are still kept.
 */
export function createToolAccounting(parts: ToolAccountingParts): ToolAccounting {
  const trail = parts.trail ?? NO_AUDIT;
  const instruments: ToolInstruments | undefined = parts.meter ? toolInstruments(parts.meter) : undefined;
  const longestMs = parts.longestCallMs ?? (() => DEFAULT_LONGEST_CALL_MS);

  return {
    async admit(caller: McpCaller, facts: ToolCallFacts, signal: AbortSignal): Promise<ToolCallCharge> {
      if (signal.aborted) throw canceled();
      const startedAt = performance.now();
      const span: Span | undefined = parts.tracer ? startToolSpan(parts.tracer, facts) : undefined;
      const price = priceOf(facts.priceUsd);
      const deps = parts.tenancy?.chargeDeps();
      let admission: ToolAdmission | undefined;
      if (caller.principal && deps) {
        try {
          admission = await admitTool(deps, { principal: caller.principal, tool: facts.tool, micros: price.micros, longestMs: longestMs(facts.server) });
        } catch (error) {
          const refused = error instanceof ToolRefused ? error.error : new McpError(MCP_ERRORS.internal, "internal error");
          endToolCall(span, instruments, facts, { outcome: "refused", durationMs: performance.now() - startedAt, ...(typeof refused.data?.status === "number" ? { status: refused.data.status } : {}) });
          throw refused;
        }
        if (signal.aborted) {
          releaseTool(deps, admission);
          endToolCall(span, instruments, facts, { outcome: "canceled", durationMs: performance.now() - startedAt });
          throw canceled();
        }
      }
      const id = admission?.id ?? randomUUID();
      let settled = false;
      return {
        settle(settlement: ToolCallSettlement) {
          if (settled) return;
          settled = true;
          const micros = chargedOutcome(settlement.outcome) ? price.micros : 0;
          try {
            const replica = deps?.replica;
            if (deps) settleTool(deps, admission, toolRecord({ id, facts, settlement, admission, picos: price.picos, micros: price.micros, at: Date.now(), ...(replica === undefined ? {} : { replica }) }));
            trail.record(toolAuditEvent({ principal: admission?.principal ?? caller.principal, facts, settlement, recordId: id, costMicros: micros }));
          } catch (error) {
            // Bookkeeping never fails the call it keeps: what went wrong is logged (without arguments), the rest still runs.
            parts.logger.error({ event: "mcp.tool_settle_failed", server: facts.server, tool: facts.tool, cause: error instanceof Error ? error.message.slice(0, 200) : "unknown" });
          }
          endToolCall(span, instruments, facts, { outcome: settlement.outcome, durationMs: settlement.durationMs, resultBytes: settlement.resultBytes });
        },
      };
    },
  };
}
