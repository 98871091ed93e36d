import { request } from "undici";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createInProcessSimulator, type InProcessSimulator } from "../../src/simulator/in-process.js";
import { parseKnobs } from "../../src/simulator/knobs.js";
import { buildScript, exactBytes } from "../../src/simulator/script.js";
import { dueIn } from "../../src/simulator/stream-response.js";
import { createSseDecoder } from "../../src/sse/decoder.js";

/**
 * The knobs behind the bench's public streaming profile (bench/README.md):
 * text deltas of exactly N bytes, and tokens on a fixed clock.
 */

let sim: InProcessSimulator;
beforeEach(() => {
  sim = createInProcessSimulator();
});
afterEach(() => sim.close());

describe("token_bytes", () => {
  it("makes every text token exactly N bytes of ASCII, multi-byte words included", () => {
    const knobs = parseKnobs("sim-1?tokens=64&token_bytes=16", []);
    const texts = buildScript(knobs, { inputTokens: 1, action: { kind: "answer" } }).steps.map((s) => (s.type === "text" ? s.text : ""));
    expect(texts).toHaveLength(64);
    for (const text of texts) {
      expect(Buffer.byteLength(text, "utf8")).toBe(16);
      expect(text).toMatch(/^[\x20-\x7e]{16}$/);
    }
    expect(exactBytes("日本 ", 4)).toBe(" ...");
    expect(exactBytes("lantern ", 4)).toBe("lant");
  });

  it("streams the profile's shape on the OpenAI wire: a role chunk, 64 deltas of 16 bytes, a finish chunk and [DONE]", async () => {
    const res = await request(`${sim.origin}/v1/chat/completions`, {
      method: "POST",
      dispatcher: sim.dispatcher,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim-1", stream: true, messages: [{ role: "user", content: "#sim tokens=64 token_bytes=16 interval_ms=1" }] }),
    });
    const decoder = createSseDecoder({ maxEventSize: 1 << 20 });
    const data: string[] = [];
    for await (const bytes of res.body) for (const event of decoder.push(bytes as Uint8Array)) data.push(event.data);
    expect(data.at(-1)).toBe("[DONE]");
    const chunks = data.slice(0, -1).map((d) => (JSON.parse(d) as { choices: Array<{ delta: { role?: string; content?: string }; finish_reason: string | null }> }).choices[0]!);
    expect(chunks).toHaveLength(66);
    expect(chunks[0]!.delta.role).toBe("assistant");
    expect(chunks.at(-1)!.finish_reason).toBe("stop");
    const contents = chunks.slice(1, -1).map((c) => c.delta.content!);
    expect(contents.map((c) => Buffer.byteLength(c))).toEqual(Array(64).fill(16));
  });
});

describe("interval_ms", () => {
  it("schedules token k at k intervals after the first: a late token goes at once and the next keeps the schedule", () => {
    expect(dueIn(100, 1, 20, 100)).toBe(20);
    expect(dueIn(100, 3, 20, 150)).toBe(10);
    expect(dueIn(100, 3, 20, 175)).toBe(0);
    expect(dueIn(100, 4, 20, 175)).toBe(5);
  });

  it("is parsed and bounded like the other delays", () => {
    expect(parseKnobs("sim-1?interval_ms=20", []).intervalMs).toBe(20);
    expect(() => parseKnobs("sim-1?interval_ms=-1", [])).toThrow(/interval_ms/);
  });
});
