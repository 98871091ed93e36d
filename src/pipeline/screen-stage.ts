import type { ModelRoute } from "../config/config.js";
import type { ComplianceDecision } from "../compliance/compliance-decision.js";
import { enforce, mustStayLocal, type Screened, screenTags } from "../compliance/screen-request.js";
import type { TenantCharge } from "../tenancy/tenant-charge.js";
import type { Principal } from "../tenancy/principal.js";

/**
 * The compliance stage of a chat or embedding request, after the key's
 * allowlist: the route it may take (its local targets only, when it must
 * stay local) or the refusal (also of a tag in which the policy finds
 * something), with what was found told to the usage record
 * (counts), the access line (kinds) and the audit log (each decision).
 */
export function screenStage(
  screened: Screened,
  asked: ModelRoute,
  ctx: { readonly requestId: string; readonly principal?: Principal; readonly remote?: string; readonly fields?: Record<string, unknown>; readonly tags?: Readonly<Record<string, string>> },
  charge: Pick<TenantCharge, "found">,
  onCompliance: ((decision: ComplianceDecision) => void) | undefined,
): ModelRoute {
  const decide = (action: ComplianceDecision["action"], outcome: ComplianceDecision["outcome"], found = screened.found) =>
    onCompliance?.({ action, outcome, alias: asked.alias, requestId: ctx.requestId, ...(ctx.principal ? { principal: ctx.principal } : {}), ...(ctx.remote ? { remote: ctx.remote } : {}), ...(found ? { found } : {}) });
  // Tags go to the ledger and the spend reports, kept for years: personal data has no place there, whatever the mode.
  const tagged = ctx.tags ? screenTags(ctx.tags, screened.policy) : undefined;
  if (tagged) {
    decide("pii.block", "refused", tagged.found);
    throw tagged.refusal;
  }
  if (screened.found) {
    charge.found(screened.found);
    if (ctx.fields) ctx.fields.pii = Object.keys(screened.found).sort().join(",");
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
