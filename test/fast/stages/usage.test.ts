import { describe, expect, it } from "vitest";
import type { UsageDelta } from "../../../src/core/delta.js";
import { usageStage } from "../../../src/pipeline/stages/usage.js";
import type { UsageMeter } from "../../../src/usage/usage-meter.js";
import { fakeCall } from "../helpers/fake-call.js";

const ESTIMATE: UsageDelta = { type: "usage", inputTokens: 3, outputTokens: 2, cachedInputTokens: 0, reasoningTokens: 0 };

/** A meter whose only answers are whether usage is missing and the estimate it would send. */
function meter(missingUsage: boolean): UsageMeter & { asked: number } {
  const fake = {
    asked: 0,
    missingUsage,
    produced: true,
    ttftMs: 1,
    observe: () => undefined,
    estimateIfMissing: () => {
      fake.asked++;
      return Promise.resolve(ESTIMATE);
    },
    final: () => Promise.reject(new Error("not read by the usage stage")),
  };
  return fake;
}

describe("usage stage", () => {
  it("adds the meter's estimate before finish when the provider reported no usage", async () => {
    const m = meter(true);
    const part = await usageStage().open(fakeCall({ meter: m }).call);
    expect(await part?.beforeFinish?.()).toBe(ESTIMATE);
    expect(m.asked).toBe(1);
  });

  it("adds nothing, and waits for nothing, when the provider reported usage", async () => {
    const m = meter(false);
    const part = await usageStage().open(fakeCall({ meter: m }).call);
    expect(part?.beforeFinish?.()).toBeUndefined();
    expect(m.asked).toBe(0);
  });

  it("reads the call's own meter: nothing produced, nothing to add", async () => {
    const part = await usageStage().open(fakeCall().call);
    expect(part?.beforeFinish?.()).toBeUndefined();
    expect(part?.tap).toBeUndefined();
  });
});
