import { describe, expect, it } from "vitest";
import type { ComplianceDecision } from "../../../src/compliance/compliance-decision.js";
import { NO_POLICY, type RequestPolicy } from "../../../src/compliance/pii-policy.js";
import type { Screened } from "../../../src/compliance/screen-request.js";
import { GatewayError } from "../../../src/core/errors.js";
import { complianceStage } from "../../../src/pipeline/stages/compliance.js";
import { fakeCall, route, target } from "../helpers/fake-call.js";

const LOCAL = target("local", { local: true });
const REMOTE = target("remote");
const MIXED = route({ targets: [REMOTE, LOCAL] });

/** A call screened as `screened` says (what the redact stage would have left), with its decisions kept. */
function screenedCall(policy: Partial<RequestPolicy>, found?: Record<string, number>, extra: Partial<Screened> = {}) {
  const { call } = fakeCall({ route: MIXED, ctx: { requestId: "r7" } });
  call.screened = { policy: { ...NO_POLICY, ...policy }, request: call.request, ...(found ? { found } : {}), ...extra };
  const decisions: ComplianceDecision[] = [];
  return { call, decisions, stage: complianceStage((d) => decisions.push(d)) };
}

describe("compliance stage", () => {
  it("under no policy the call is untouched and nothing is decided", async () => {
    const { call, decisions, stage } = screenedCall({});
    expect(await stage.open(call)).toBeUndefined();
    expect(call.route).toBe(MIXED);
    expect(call.summary.record).toEqual({});
    expect(decisions).toEqual([]);
    expect(call.summary.facts.pii).toBeUndefined();
  });

  it("`block` with personal data found refuses the call, tells the audit log, and still records what was found", () => {
    const { call, decisions, stage } = screenedCall({ mode: "block" }, { phone: 1, email: 2 });
    expect(() => stage.open(call)).toThrow(expect.objectContaining({ code: "invalid_request" }) as GatewayError);
    expect(decisions).toEqual([{ action: "pii.block", outcome: "refused", alias: "a", requestId: "r7", found: { phone: 1, email: 2 } }]);
    expect(call.summary.record.pii).toEqual({ phone: 1, email: 2 });
    expect(call.summary.facts.pii).toBe("email,phone");
  });

  it("`local-only` with personal data found narrows the route to its local targets", async () => {
    const { call, decisions, stage } = screenedCall({ mode: "local-only", keptLocal: true }, { email: 1 });
    await stage.open(call);
    expect(call.route?.targets).toEqual([LOCAL]);
    expect(decisions).toEqual([{ action: "pii.local_only", outcome: "ok", alias: "a", requestId: "r7", found: { email: 1 } }]);
    expect(call.summary.facts.pii).toBe("email");
  });

  it("a local-only key on an alias without local targets is refused", () => {
    const { call, decisions, stage } = screenedCall({ localOnly: true, keptLocal: true });
    call.route = route({ targets: [REMOTE] });
    expect(() => stage.open(call)).toThrow(expect.objectContaining({ code: "failed_precondition" }) as GatewayError);
    expect(decisions).toEqual([{ action: "route.local_only", outcome: "refused", alias: "a", requestId: "r7" }]);
  });

  it("a tag holding personal data is refused whatever the mode", () => {
    const { call, decisions, stage } = screenedCall({ mode: "redact", kinds: new Set(["email"]) });
    const tagged = fakeCall({ route: MIXED, ctx: { requestId: "r7", tags: { owner: "jane.doe@example.com" } } }).call;
    tagged.screened = call.screened;
    expect(() => stage.open(tagged)).toThrow(GatewayError);
    expect(decisions).toEqual([{ action: "pii.block", outcome: "refused", alias: "a", requestId: "r7", found: { email: 1 } }]);
  });

  it("runs after the route stage: without a route it is the table's mistake", () => {
    const { call, stage } = screenedCall({ mode: "block" });
    call.route = undefined;
    expect(() => stage.open(call)).toThrow(expect.objectContaining({ code: "internal" }) as GatewayError);
  });
});
