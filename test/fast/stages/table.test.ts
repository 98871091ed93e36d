import { describe, expect, it } from "vitest";
import { chatStages, embeddingStages, type StageDeps } from "../../../src/pipeline/stages/index.js";
import type { StreamRegistry } from "../../../src/pipeline/stream-registry.js";
import type { Telemetry } from "../../../src/telemetry/telemetry.js";

/** Building the table calls no dependency: stages reach them only when a call opens them. */
const DEPS: StageDeps = {
  telemetry: {} as Telemetry,
  registry: {} as StreamRegistry,
  subcall: () => {
    throw new Error("no call opens in this test");
  },
};

describe("the stage table", () => {
  it("runs the stages in the documented order (stages/index.ts, each line's why)", () => {
    expect(chatStages(DEPS).map((s) => s.name)).toEqual(["redact", "telemetry", "overhead", "allowlist", "route", "compliance", "slot", "system-prompt", "context", "charge", "cache", "record", "answer-limit", "usage"]);
  });

  it("an embedding call takes the stages that act on neither deltas nor a conversation, in the same order", () => {
    expect(embeddingStages(DEPS).map((s) => s.name)).toEqual(["redact", "telemetry", "overhead", "allowlist", "route", "compliance", "slot", "charge"]);
  });

  it("stage names are unique: they name the stage in logs and the architecture doc", () => {
    const names = chatStages(DEPS).map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
  });
});
