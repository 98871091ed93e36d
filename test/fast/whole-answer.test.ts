import { describe, expect, it } from "vitest";
import { foldedBytes, wholeAnswer } from "../../src/call/whole-answer.js";
import type { Delta } from "../../src/core/delta.js";
import { type GatewayError, toGatewayError } from "../../src/core/errors.js";
import { createAnswerCapture } from "../../src/recording/answer-summary.js";

/** A pulled source that records how it was ended: returned (a consumer that left) or thrown into (told why). */
function source(deltas: readonly Delta[]) {
  const seen: { thrown?: GatewayError; returned: boolean; pulled: number } = { returned: false, pulled: 0 };
  const iterator: AsyncGenerator<Delta, void, undefined> = {
    async next() {
      if (seen.pulled >= deltas.length) return { value: undefined, done: true };
      return { value: deltas[seen.pulled++]!, done: false };
    },
    async return() {
      seen.returned = true;
      return { value: undefined, done: true };
    },
    async throw(error: unknown) {
      seen.thrown = toGatewayError(error);
      return { value: undefined, done: true };
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  return { iterator, seen };
}

describe("an answer folded whole", () => {
  it("passes an answer within the bound through, each delta observed once", async () => {
    const deltas: Delta[] = [
      { type: "text", text: "héllo " },
      { type: "text", text: "world" },
      { type: "finish", reason: "stop" },
    ];
    const { iterator, seen } = source(deltas);
    const observed: Delta[] = [];
    const out: Delta[] = [];
    for await (const delta of wholeAnswer(iterator, 1_024, (d) => observed.push(d))) out.push(delta);
    expect(out).toEqual(deltas);
    expect(observed).toEqual(deltas);
    expect(seen.returned).toBe(false);
    expect(seen.thrown).toBeUndefined();
  });

  it("stops at the delta that passes the bound, tells the source why, and fails naming the setting", async () => {
    const deltas: Delta[] = Array.from({ length: 100 }, () => ({ type: "text", text: "日本".repeat(10) }));
    const { iterator, seen } = source(deltas);
    const out: Delta[] = [];
    const failure = await (async () => {
      for await (const delta of wholeAnswer(iterator, 1_000, () => undefined)) out.push(delta);
    })().then(
      () => undefined,
      (error: unknown) => toGatewayError(error),
    );
    // UTF-8 bytes, not characters: 60 bytes a delta, so 16 fit in 1,000.
    expect(foldedBytes(deltas[0]!)).toBe(60);
    expect(out).toHaveLength(16);
    expect(seen.pulled).toBe(17);
    expect(failure).toMatchObject({ code: "upstream_protocol" });
    expect(failure!.message).toContain("limits.maxAnswerBytes (1000 bytes)");
    expect(seen.thrown).toBe(failure);
  });

  it("a consumer that stops early returns the source", async () => {
    const { iterator, seen } = source([
      { type: "text", text: "a" },
      { type: "text", text: "b" },
    ]);
    for await (const _ of wholeAnswer(iterator, 1_024)) break;
    expect(seen.returned).toBe(true);
  });
});

describe("the recorder's capture", () => {
  it("lets go of what it kept once the answer passes its bound, and says so", () => {
    const capture = createAnswerCapture(0, () => 0, 100);
    capture.observe({ type: "text", text: "x".repeat(60) });
    capture.observe({ type: "tool_call", index: 0, id: "c", name: "f", arguments: "{}" });
    expect(capture.tooLarge).toBe(false);
    capture.observe({ type: "text", text: "y".repeat(60) });
    expect(capture.tooLarge).toBe(true);
    capture.observe({ type: "text", text: "z" });
    expect(capture.summary(undefined)).toMatchObject({ text: "", toolCalls: [] });
  });
});
