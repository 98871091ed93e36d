import { describe, expect, it } from "vitest";
import { detectPii, detectPiiInSlices, SLICE_CHARS } from "../../src/compliance/pii-detectors.js";
import { policyFor } from "../../src/compliance/pii-policy.js";
import { screeningIsLong, screenRequest, screenRequestInSlices } from "../../src/compliance/screen-request.js";
import { resolveConfig } from "../../src/config/config.js";
import type { ChatRequest } from "../../src/core/chat-request.js";

/**
 * Issue #43 item 9's bound: a prompt of megabytes is screened in slices
 * with the event loop turning between them, and finds exactly what
 * screening it whole finds, values across slice edges included.
 */
const EMAIL = "dana.slice@example.com";

/** `length` characters of filler with values placed so that some straddle each slice edge. */
function longText(length: number): string {
  const filler = "lorem ipsum dolor sit amet, 12:30 v2.1.3 $45.00 ";
  let text = filler.repeat(Math.ceil(length / filler.length)).slice(0, length);
  const put = (at: number, value: string) => (text = text.slice(0, at) + ` ${value} ` + text.slice(at + value.length + 2));
  for (let edge = SLICE_CHARS; edge < length - 100; edge += SLICE_CHARS) {
    put(edge - 10, EMAIL);
    put(edge + 40, "１２３-４５-６７８９");
    put(edge - 3_000, "4111 1111 1111 1111");
  }
  return text;
}

describe("screening a long prompt in slices", () => {
  it("finds what screening it whole finds, values on the slice edges too", async () => {
    const text = longText(5 * SLICE_CHARS + 777);
    const whole = detectPii(text);
    expect(whole.filter((s) => s.kind === "email")).toHaveLength(5);
    expect(await detectPiiInSlices(text)).toEqual(whole);
  });

  it("lets the event loop turn between slices, and stops when the caller leaves", async () => {
    const text = longText(6 * SLICE_CHARS);
    let turns = 0;
    let screening = true;
    const count = () => {
      turns++;
      if (screening) setImmediate(count);
    };
    setImmediate(count);
    await detectPiiInSlices(text);
    screening = false;
    expect(turns).toBeGreaterThanOrEqual(5);

    const left = new AbortController();
    const pending = detectPiiInSlices(text, undefined, undefined, left.signal);
    left.abort(new Error("gone"));
    await expect(pending).rejects.toThrow("gone");
  });

  it("a long request screened in slices is the same request screened whole", async () => {
    const config = resolveConfig({ providers: { p: { kind: "openai", baseUrl: "http://127.0.0.1:1" } }, models: { m: { provider: "p", model: "x", pii: { mode: "redact" } } } }, {});
    const policy = policyFor(config, undefined, config.models.get("m"));
    const request: ChatRequest = {
      model: "m",
      messages: [
        { role: "system", content: [{ type: "text", text: `write to ${EMAIL}` }] },
        {
          role: "user",
          content: [
            { type: "text", text: longText(3 * SLICE_CHARS) },
            { type: "text", text: ` and ${EMAIL}` },
          ],
        },
      ],
      tools: [],
      sampling: { stop: [] },
      metadata: { labels: {} },
    };
    expect(screeningIsLong(request)).toBe(true);
    const sliced = await screenRequestInSlices(request, policy);
    const whole = screenRequest(request, policy);
    expect(sliced.request).toEqual(whole.request);
    expect(sliced.found).toEqual(whole.found);
    expect(JSON.stringify(sliced.request)).not.toContain(EMAIL);
  });
});
