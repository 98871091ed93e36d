import { describe, expect, it } from "vitest";
import { GatewayError } from "../../../src/core/errors.js";
import { chargeStage } from "../../../src/pipeline/stages/charge.js";
import { fakeCall, fakeCharge } from "../helpers/fake-call.js";

describe("charge stage", () => {
  it("admits the call on its route (as the stages before it left it) and leaves no part", async () => {
    const charge = fakeCharge();
    const { call } = fakeCall({ charge });
    expect(await chargeStage().open(call)).toBeUndefined();
    expect(charge.argsOf("admit")).toEqual([[call.route]]);
  });

  it("a refused admission refuses the call with the charge's error", async () => {
    const refusal = new GatewayError("rate_limited", "too many");
    const { call } = fakeCall({ charge: fakeCharge({ refuse: refusal }) });
    await expect(chargeStage().open(call)).rejects.toBe(refusal);
  });

  it("before the route stage it is the table's mistake: internal", async () => {
    const charge = fakeCharge();
    const { call } = fakeCall({ charge, routed: false });
    expect(() => chargeStage().open(call)).toThrow(expect.objectContaining({ code: "internal" }));
    expect(charge.calls).toEqual([]);
  });
});
