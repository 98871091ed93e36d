import { describe, expect, it } from "vitest";
import type { Delta } from "../src/core/delta.js";
import { createChunkEncoder } from "../src/edges/openai/to-openai.js";
import { createByteBatch } from "../src/http/byte-batch.js";

/** What the facade writes for one delta: the encoder's parts through a byte batch, as text. */
function written(encoder: ReturnType<typeof createChunkEncoder>, delta: Delta): string {
  const batch = createByteBatch();
  encoder.events(delta, (part) => batch.push(part));
  return batch.take().toString("utf8");
}

/** What the facade wrote before the text fast path: each chunk object through JSON.stringify. */
function reference(encoder: ReturnType<typeof createChunkEncoder>, delta: Delta): string {
  return encoder
    .encode(delta)
    .map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`)
    .join("");
}

const TEXTS = ["", "Hello", ' "quoted" \\ back', "line\nbreak\ttab\r", "\u0000\u001f\u007f", "naïve 東京 😀", "\ud800 lone surrogate \udfff", "</script>\u2028\u2029"];
const MODELS = ["sim-1", 'odd "model" \\ name', "模型"];

describe("the facade's SSE events", () => {
  for (const model of MODELS) {
    it(`text deltas are byte-identical to JSON.stringify of their chunk (model ${JSON.stringify(model)})`, () => {
      const fast = createChunkEncoder({ includeUsage: true });
      const slow = createChunkEncoder({ includeUsage: true });
      const start: Delta = { type: "start", responseId: "resp_0123", provider: "p", model };
      expect(written(fast, start)).toBe(reference(slow, start));
      for (const text of TEXTS) {
        const delta: Delta = { type: "text", text };
        expect(written(fast, delta)).toBe(reference(slow, delta));
      }
    });
  }

  it("every other kind is its chunks through JSON.stringify", () => {
    const fast = createChunkEncoder({ includeUsage: true });
    const slow = createChunkEncoder({ includeUsage: true });
    const deltas: Delta[] = [
      { type: "start", responseId: "resp_1", provider: "p", model: "m" },
      { type: "reasoning", text: "think" },
      { type: "tool_call", index: 0, id: "call_1", name: "f", arguments: '{"a":' },
      { type: "logprobs", tokens: [{ token: "a", logprob: -0.5, topLogprobs: [] }] },
      { type: "usage", inputTokens: 3, outputTokens: 4, cachedInputTokens: 0, reasoningTokens: 1 },
      { type: "finish", reason: "stop" },
    ];
    for (const delta of deltas) expect(written(fast, delta)).toBe(reference(slow, delta));
  });

  it("a whole stream gathered in one batch is the events one after another", () => {
    const fast = createChunkEncoder({ includeUsage: false });
    const slow = createChunkEncoder({ includeUsage: false });
    const deltas: Delta[] = [{ type: "start", responseId: "resp_2", provider: "p", model: "m" }, ...TEXTS.map((text): Delta => ({ type: "text", text })), { type: "finish", reason: "length" }];
    const batch = createByteBatch();
    for (const delta of deltas) fast.events(delta, (part) => batch.push(part));
    expect(batch.take().toString("utf8")).toBe(deltas.map((delta) => reference(slow, delta)).join(""));
    expect(batch.empty).toBe(true);
  });
});
