import type { ComplianceDecision } from "../../compliance/compliance-decision.js";
import { NO_POLICY } from "../../compliance/pii-policy.js";
import { enforce, mustStayLocal, type Screened, screenTags } from "../../compliance/screen-request.js";
import type { ModelRoute } from "../../config/config.js";
import type { CallSummary } from "../../core/call-summary.js";
import type { Principal } from "../../tenancy/principal.js";
import { routeOf, type Stage } from "../stage.js";

/** Who a compliance decision is about, for the audit log. */
export interface Screenee {
  readonly requestId: string;
  readonly principal?: Principal;
  readonly remote?: string;
  readonly tags?: Readonly<Record<string, string>>;
}

/**
 * What the PII policy decides for the screened call, after the key's
 * allowlist: the route it may take (its local targets only, when it must
 * stay local) or the refusal (also of a tag in which the policy finds
 * something), with what was found in the call summary (counts for the usage
 * record, kinds for the access line) and each decision told to the audit log.
 */
export function complianceStage(onCompliance: ((decision: ComplianceDecision) => void) | undefined): Stage {
  return {
    name: "compliance",
    open(call) {
      if (call.screened.policy === NO_POLICY) return undefined;
      call.route = enforcePolicy(call.screened, routeOf(call), call.ctx, call.summary, onCompliance);
      return undefined;
    },
  };
}

/** The decision itself, shared with the embeddings path's table. */
export function enforcePolicy(screened: Screened, asked: ModelRoute, who: Screenee, summary: Pick<CallSummary, "facts" | "record">, onCompliance: ((decision: ComplianceDecision) => void) | undefined): ModelRoute {
  const decide = (action: ComplianceDecision["action"], outcome: ComplianceDecision["outcome"], found = screened.found) =>
    onCompliance?.({ action, outcome, alias: asked.alias, requestId: who.requestId, ...(who.principal ? { principal: who.principal } : {}), ...(who.remote ? { remote: who.remote } : {}), ...(found ? { found } : {}) });
  // Tags go to the ledger and the spend reports, kept for years: personal data has no place there, whatever the mode.
  const tagged = who.tags ? screenTags(who.tags, screened.policy) : undefined;
  if (tagged) {
    decide("pii.block", "refused", tagged.found);
    throw tagged.refusal;
  }
  if (screened.found) {
    summary.record.pii = screened.found;
    summary.facts.pii = Object.keys(screened.found).sort().join(",");
  }
  const local = mustStayLocal(screened);
  const localAction = screened.found && screened.policy.mode === "local-only" ? "pii.local_only" : "route.local_only";
  let chosen: ModelRoute;
  try {
    chosen = enforce(screened, asked);
  } catch (error) {
    decide(screened.policy.mode === "block" && screened.found ? "pii.block" : screened.unplaceable ? "pii.redact" : localAction, "refused");
    throw error;
  }
  if (screened.vault) decide("pii.redact", "ok");
  else if (local) decide(localAction, "ok");
  return chosen;
}
