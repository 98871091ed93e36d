import { describe, expect, it } from "vitest";
import { GatewayError } from "../../../src/core/errors.js";
import { slotStage } from "../../../src/pipeline/stages/slot.js";
import type { StreamRegistry } from "../../../src/pipeline/stream-registry.js";
import { fakeCall } from "../helpers/fake-call.js";

/** A registry that hands out slots and counts their releases; `draining` refuses as the real one does. */
function fakeRegistry(draining = false) {
  const admitted: Array<(reason: GatewayError) => void> = [];
  let released = 0;
  const registry: StreamRegistry = {
    get active() {
      return admitted.length - released;
    },
    draining,
    admit(abort) {
      if (draining) throw new GatewayError("shutting_down", "draining");
      admitted.push(abort);
      return () => void released++;
    },
    startDraining: () => undefined,
    idle: () => Promise.resolve(true),
    abortAll: (reason) => admitted.forEach((abort) => abort(reason)),
  };
  return { registry, admitted, released: () => released };
}

describe("slot stage", () => {
  it("admits the call with its stop, so shutdown can end it, and releases the slot at the end", async () => {
    const { registry, admitted, released } = fakeRegistry();
    const { call, stopped } = fakeCall();
    const part = await slotStage(registry).open(call);
    expect(admitted).toEqual([call.stop]);
    const reason = new GatewayError("shutting_down", "bye");
    registry.abortAll(reason);
    expect(stopped).toEqual([reason]);
    expect(released()).toBe(0);
    part?.end?.({});
    expect(released()).toBe(1);
  });

  it("a draining registry refuses the call", () => {
    const { call } = fakeCall();
    expect(() => slotStage(fakeRegistry(true).registry).open(call)).toThrow(expect.objectContaining({ code: "shutting_down" }) as GatewayError);
  });
});
