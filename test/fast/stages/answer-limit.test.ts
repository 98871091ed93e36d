import { describe, expect, it } from "vitest";
import { answerLimitStage } from "../../../src/pipeline/stages/answer-limit.js";
import type { StreamCut } from "../../../src/pipeline/stream-cut.js";
import type { Principal } from "../../../src/tenancy/principal.js";
import { fakeCall, fakeCharge, request, target, text } from "../helpers/fake-call.js";

const KEY: Principal = { name: "team-a", id: "aaaaaaaaaaaa", sha256: "a".repeat(64), source: "config", limits: {} };

describe("answer-limit stage", () => {
  it("installs no guard when the answer has no limit: such calls pay nothing per delta", async () => {
    const part = await answerLimitStage(undefined).open(fakeCall().call);
    expect(part?.guard?.(target("m"))).toBeUndefined();
  });

  it("past max_tokens: tells onCut, sets facts.cut and stops the answer with finish length", async () => {
    const cuts: StreamCut[] = [];
    const { call } = fakeCall({ request: request([text("user", "hi")], { sampling: { stop: [], maxTokens: 1 } }), ctx: { principal: KEY, remote: "10.0.0.1", requestId: "r3" } });
    const part = await answerLimitStage((cut) => cuts.push(cut)).open(call);
    const guard = part!.guard!(target("m"))!;
    expect(guard({ type: "text", text: "short" })).toBeUndefined();
    expect(cuts).toEqual([]);
    // Cut past 16 characters a token plus a margin (output-guard.ts): the delta that crosses it is not delivered.
    expect(guard({ type: "text", text: "x".repeat(2_000) })).toEqual({ reason: "max_tokens", finish: "length" });
    expect(call.summary.facts.cut).toBe("max_tokens");
    expect(cuts).toEqual([{ requestId: "r3", alias: "a", key: { id: KEY.id, name: KEY.name }, remote: "10.0.0.1", target: "p/m", reason: "max_tokens", limitTokens: 1, deliveredChars: 5 }]);
  });

  it("the key's budget: the allowance the charge admitted bounds the answer at the target's price", async () => {
    const charge = fakeCharge({ allowance: { micros: 10, inputTokens: 0 } });
    const { call } = fakeCall({ charge });
    const part = await answerLimitStage(undefined).open(call);
    // 10 micro-dollars at $1 per million output tokens: 10 tokens, 4 characters each.
    const guard = part!.guard!(target("m", { price: { inputPerMTok: 1, outputPerMTok: 1 } }))!;
    expect(guard({ type: "text", text: "x".repeat(40) })).toBeUndefined();
    expect(guard({ type: "text", text: "x" })).toEqual({ reason: "budget", finish: "length" });
    expect(call.summary.facts.cut).toBe("budget");
    // Without a price the budget cannot be counted: no guard.
    expect(part?.guard?.(target("m"))).toBeUndefined();
  });

  it("the guard is asked per committed target: the serving target's own output limit counts", async () => {
    const part = await answerLimitStage(undefined).open(fakeCall().call);
    expect(part?.guard?.(target("m", { capabilities: { maxOutputTokens: 1 } }))).toBeTypeOf("function");
  });

  it("a cut without onCut still stops the answer", async () => {
    const { call } = fakeCall({ request: request(undefined, { sampling: { stop: [], maxTokens: 1 } }) });
    const guard = (await answerLimitStage(undefined).open(call))!.guard!(target("m"))!;
    expect(guard({ type: "reasoning", text: "x".repeat(2_000) })).toEqual({ reason: "max_tokens", finish: "length" });
  });
});
