import type { Counter } from "@opentelemetry/api";
import type { AuditTrail } from "../audit/audit-trail.js";
import type { Logger } from "../logging/logger.js";
import type { CutReason } from "./output-guard.js";

/** An answer the gateway ended itself (finish `length`) because it passed what the request reserved. */
export interface StreamCut {
  readonly requestId: string;
  readonly alias: string;
  /** The key, by id (what the audit names) and name (for people), when there is one. */
  readonly key?: { readonly id: string; readonly name: string };
  /** The client's address, as every event about a key's request carries it. */
  readonly remote?: string;
  /** The serving target (`provider/model`). */
  readonly target: string;
  readonly reason: CutReason;
  readonly limitTokens: number;
  readonly deliveredChars: number;
}

/**
 * Where a cut is told: a warning line, the `sluice.streams.cut` counter by
 * alias and reason, and an audit event (`stream.cut`) naming the key, so an
 * upstream that ignores max_tokens shows up before its invoice does.
 */
export function reportCuts(deps: { readonly logger: Logger; readonly trail: AuditTrail; readonly counter?: Counter }): (cut: StreamCut) => void {
  return (cut) => {
    deps.logger.warn({ event: "stream.cut", requestId: cut.requestId, alias: cut.alias, target: cut.target, reason: cut.reason, limitTokens: cut.limitTokens, deliveredChars: cut.deliveredChars });
    deps.counter?.add(1, { "gen_ai.request.model": cut.alias, "sluice.cut.reason": cut.reason });
    deps.trail.record({
      actor: { ...(cut.key === undefined ? { kind: "anonymous" as const, id: "" } : { kind: "key" as const, id: cut.key.id }), ...(cut.remote ? { remote: cut.remote } : {}) },
      action: "stream.cut",
      target: cut.alias,
      outcome: "refused",
      requestId: cut.requestId,
      details: { ...(cut.key ? { key: cut.key.name } : {}), reason: cut.reason, limitTokens: cut.limitTokens, deliveredChars: cut.deliveredChars, target: cut.target },
    });
  };
}
