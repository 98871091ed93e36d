import { describe, expect, it } from "vitest";
import { NO_POLICY } from "../../../src/compliance/pii-policy.js";
import type { PiiVault } from "../../../src/compliance/pii-vault.js";
import type { ModelRoute, RouteTarget } from "../../../src/config/config.js";
import type { Delta } from "../../../src/core/delta.js";
import { GatewayError } from "../../../src/core/errors.js";
import { recordStage } from "../../../src/pipeline/stages/record.js";
import type { AnswerCapture } from "../../../src/recording/answer-summary.js";
import type { RecordedCall, Recorder, RecordingPlan } from "../../../src/recording/recorder.js";
import type { Principal } from "../../../src/tenancy/principal.js";
import { fakeCall, route, target } from "../helpers/fake-call.js";

const KEY: Principal = { name: "team-a", id: "aaaaaaaaaaaa", sha256: "a".repeat(64), source: "config", limits: {} };
const RECORDS = route({ record: { sampleRate: 1, maxPerDay: 10 } });

/** A recorder whose draw keeps every call (or none, `keep` false), and which keeps what it is offered. */
function fakeRecorder(keep = true) {
  const planned: Array<{ readonly route: ModelRoute; readonly call: RecordedCall }> = [];
  const observed: Delta[] = [];
  const offered: Array<{ readonly plan: RecordingPlan; readonly servedBy: RouteTarget }> = [];
  const capture: Pick<AnswerCapture, "observe"> = { observe: (d) => void observed.push(d) };
  const recorder: Pick<Recorder, "plan" | "offer"> = {
    plan(r, call, request) {
      planned.push({ route: r, call });
      return keep ? ({ capture: capture as AnswerCapture, record: true, alias: r.alias, request, id: "rec-1", tags: {} } satisfies RecordingPlan) : undefined;
    },
    offer: (plan, servedBy) => void offered.push({ plan, servedBy }),
  };
  return { recorder: recorder as Recorder, planned, observed, offered };
}

describe("record stage", () => {
  it("plans nothing for an alias that neither records nor shadows, nor without a recorder", async () => {
    const { recorder, planned } = fakeRecorder();
    expect(await recordStage(recorder).open(fakeCall().call)).toBeUndefined();
    expect(planned).toEqual([]);
    expect(await recordStage(undefined).open(fakeCall({ route: RECORDS }).call)).toBeUndefined();
  });

  it("plans a recording of an alias that records or shadows, told who asked and the answer bound", async () => {
    const { recorder, planned } = fakeRecorder();
    const { call } = fakeCall({ route: RECORDS, maxAnswerBytes: 5_000, ctx: { requestId: "r4", principal: KEY, tags: { team: "x" }, background: true } });
    await recordStage(recorder).open(call);
    expect(planned).toEqual([{ route: RECORDS, call: { requestId: "r4", keptLocal: false, maxAnswerBytes: 5_000, background: true, keyName: "team-a", tags: { team: "x" } } }]);
    const shadowing = fakeRecorder();
    await recordStage(shadowing.recorder).open(fakeCall({ route: route({ shadow: { alias: "b", sampleRate: 1, maxInFlight: 1 } }) }).call);
    expect(shadowing.planned).toHaveLength(1);
  });

  it("a call the draw did not keep leaves no part", async () => {
    expect(await recordStage(fakeRecorder(false).recorder).open(fakeCall({ route: RECORDS }).call)).toBeUndefined();
  });

  it("taps every delta into the capture and offers only a completed call that was not cut, with its serving target", async () => {
    const ends = [{ failure: new GatewayError("upstream_unavailable", "down") }, { cut: { reason: "max_tokens", finish: "length" } as const }, {}];
    const served = target("m");
    for (const [i, outcome] of ends.entries()) {
      const { recorder, observed, offered } = fakeRecorder();
      const { call } = fakeCall({ route: RECORDS });
      const part = await recordStage(recorder).open(call);
      const delta: Delta = { type: "text", text: "hi" };
      part?.tap?.(delta);
      expect(observed).toEqual([delta]);
      call.servedBy = served;
      part?.end?.(outcome);
      expect(offered.map((o) => o.servedBy)).toEqual(i === 2 ? [served] : []);
    }
  });

  it("a completed call no target served (nothing committed) is not offered", async () => {
    const { recorder, offered } = fakeRecorder();
    (await recordStage(recorder).open(fakeCall({ route: RECORDS }).call))?.end?.({});
    expect(offered).toEqual([]);
  });

  it("keptLocal: a local policy, or personal data found and sent as written; not when it was redacted", async () => {
    const keptLocal = async (screened: Parameters<typeof withScreened>[0]) => {
      const { recorder, planned } = fakeRecorder();
      await recordStage(recorder).open(withScreened(screened));
      return planned[0]!.call.keptLocal;
    };
    expect(await keptLocal({ policy: { ...NO_POLICY, localOnly: true, keptLocal: true } })).toBe(true);
    expect(await keptLocal({ policy: { ...NO_POLICY, mode: "block" }, found: { email: 1 } })).toBe(true);
    expect(await keptLocal({ policy: { ...NO_POLICY, mode: "redact" }, found: { email: 1 }, vault: {} as PiiVault })).toBe(false);
    expect(await keptLocal({ policy: NO_POLICY })).toBe(false);
  });
});

function withScreened(screened: { policy: typeof NO_POLICY; found?: Record<string, number>; vault?: PiiVault }) {
  const { call } = fakeCall({ route: RECORDS });
  call.screened = { ...call.screened, ...screened };
  return call;
}
