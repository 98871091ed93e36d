import { request } from "undici";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createInProcessSimulator, type InProcessSimulator } from "../../src/simulator/in-process.js";
import { createPromptCache, LOOKBACK_BLOCKS, type PromptBlock } from "../../src/simulator/prompt-cache.js";

/**
 * The simulator's prompt cache plays Anthropic's: a request marking
 * breakpoints reads the longest prefix cached before (at a breakpoint or up
 * to 20 blocks before one) and writes the rest up to its last breakpoint;
 * input_tokens is what is left, as Anthropic reports it.
 */

const FIVE_MINUTES = 5 * 60_000;
/** `n` blocks of `tokens` each, keyed by `prefix` and position; `marks` carry breakpoints. */
const blocks = (n: number, marks: number[], tokens = 10, prefix = "b"): PromptBlock[] => Array.from({ length: n }, (_, i) => ({ key: `${prefix}${i}`, tokens, ...(marks.includes(i) ? { breakpointTtlMs: FIVE_MINUTES } : {}) }));

describe("the prompt cache rule", () => {
  it("writes on the first request, reads the same prefix on the next, and only the new part of a longer one", () => {
    const cache = createPromptCache();
    expect(cache.use("m", blocks(4, [1, 3]))).toEqual({ read: 0, written: 40, written1h: 0 });
    expect(cache.use("m", blocks(4, [1, 3]))).toEqual({ read: 40, written: 0, written1h: 0 });
    expect(cache.use("m", blocks(7, [1, 3, 6]))).toEqual({ read: 40, written: 30, written1h: 0 });
    expect(cache.use("other-model", blocks(4, [1, 3]))).toEqual({ read: 0, written: 40, written1h: 0 });
  });

  it("a changed block ends the match there: breakpoints before it still hit", () => {
    const cache = createPromptCache();
    cache.use("m", blocks(6, [1, 5]));
    const changed = blocks(6, [1, 5]).map((b, i) => (i === 3 ? { ...b, key: "edited" } : b));
    expect(cache.use("m", changed)).toEqual({ read: 20, written: 40, written1h: 0 });
  });

  it(`finds an earlier entry up to ${LOOKBACK_BLOCKS} blocks before a breakpoint, not further`, () => {
    const cache = createPromptCache();
    cache.use("m", blocks(3, [2]));
    expect(cache.use("m", blocks(3 + LOOKBACK_BLOCKS, [2 + LOOKBACK_BLOCKS]))).toEqual({ read: 30, written: 10 * LOOKBACK_BLOCKS, written1h: 0 });
    const far = createPromptCache();
    far.use("m", blocks(3, [2]));
    expect(far.use("m", blocks(4 + LOOKBACK_BLOCKS, [3 + LOOKBACK_BLOCKS]))).toEqual({ read: 0, written: 10 * (4 + LOOKBACK_BLOCKS), written1h: 0 });
  });

  it("forgets an entry five minutes after its last use, and a read keeps it", () => {
    let now = 0;
    const cache = createPromptCache(4096, () => now);
    cache.use("m", blocks(2, [1]));
    now += FIVE_MINUTES - 1;
    expect(cache.use("m", blocks(2, [1])).read).toBe(20);
    now += FIVE_MINUTES - 1;
    expect(cache.use("m", blocks(2, [1])).read).toBe(20);
    now += FIVE_MINUTES;
    expect(cache.use("m", blocks(2, [1]))).toEqual({ read: 0, written: 20, written1h: 0 });
  });

  it("is bounded: past its limit the least recently used prefix goes", () => {
    const cache = createPromptCache(2);
    cache.use("m", blocks(1, [0], 10, "a"));
    cache.use("m", blocks(1, [0], 10, "b"));
    cache.use("m", blocks(1, [0], 10, "a"));
    cache.use("m", blocks(1, [0], 10, "c"));
    expect(cache.use("m", blocks(1, [0], 10, "a")).read).toBe(10);
    expect(cache.use("m", blocks(1, [0], 10, "b")).read).toBe(0);
  });
});

describe("the Anthropic endpoint with cache_control", () => {
  let sim: InProcessSimulator;
  beforeEach(() => {
    sim = createInProcessSimulator();
  });
  afterEach(() => sim.close());

  async function post(body: Record<string, unknown>): Promise<{ status: number; json: Record<string, unknown> }> {
    const res = await request(`${sim.anthropicBaseUrl}/messages`, {
      method: "POST",
      dispatcher: sim.dispatcher,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim-1?tokens=2", max_tokens: 100, ...body }),
    });
    return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
  }

  const EPHEMERAL = { type: "ephemeral" };
  const SYSTEM = "one two three four five six seven eight nine ten";
  const marked = (text: string) => [{ type: "text", text, cache_control: EPHEMERAL }];

  it("splits the input into cache reads, cache writes and the rest, adding up to the word count", async () => {
    const first = await post({ system: marked(SYSTEM), messages: [{ role: "user", content: marked("alpha beta") }] });
    const fiveMinutes = (n: number) => ({ ephemeral_5m_input_tokens: n, ephemeral_1h_input_tokens: 0 });
    expect(first.json.usage).toEqual({ input_tokens: 0, cache_creation_input_tokens: 12, cache_read_input_tokens: 0, cache_creation: fiveMinutes(12), output_tokens: 2 });
    const next = await post({
      system: marked(SYSTEM),
      messages: [
        { role: "user", content: marked("alpha beta") },
        { role: "assistant", content: "gamma" },
        {
          role: "user",
          content: [
            { type: "text", text: "delta epsilon", cache_control: EPHEMERAL },
            { type: "text", text: "zeta eta theta" },
          ],
        },
      ],
    });
    expect(next.json.usage).toEqual({ input_tokens: 3, cache_creation_input_tokens: 3, cache_read_input_tokens: 12, cache_creation: fiveMinutes(3), output_tokens: 2 });
  });

  it("splits cache writes by lifetime: up to a ttl 1h breakpoint an hour, after it five minutes", async () => {
    const hour = { type: "ephemeral", ttl: "1h" };
    const body = { system: [{ type: "text", text: SYSTEM, cache_control: hour }], messages: [{ role: "user", content: marked("alpha beta") }] };
    const first = await post(body);
    expect(first.json.usage).toMatchObject({ input_tokens: 0, cache_creation_input_tokens: 12, cache_read_input_tokens: 0 });
    const split = (first.json.usage as { cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number } }).cache_creation;
    expect(split.ephemeral_1h_input_tokens).toBeGreaterThan(0);
    expect(split.ephemeral_5m_input_tokens).toBeGreaterThan(0);
    expect(split.ephemeral_1h_input_tokens + split.ephemeral_5m_input_tokens).toBe(12);
    // The unit test of the same split, in tokens.
    const blocks = [
      { key: "a", tokens: 100, breakpointTtlMs: 3_600_000 },
      { key: "b", tokens: 7 },
      { key: "c", tokens: 30, breakpointTtlMs: 300_000 },
    ];
    expect(createPromptCache().use("m", blocks)).toEqual({ read: 0, written: 137, written1h: 100 });
  });

  it("a request without breakpoints is never cached and reports no cache fields", async () => {
    const plain = { system: SYSTEM, messages: [{ role: "user", content: "alpha beta" }] };
    await post(plain);
    expect((await post(plain)).json.usage).toEqual({ input_tokens: 12, output_tokens: 2 });
  });

  it("refuses a fifth breakpoint, and breakpoints on thinking and empty text, with Anthropic's errors", async () => {
    const five = await post({ system: [...marked("a"), ...marked("b")], messages: [{ role: "user", content: [...marked("c"), ...marked("d"), ...marked("e")] }] });
    expect(five.status).toBe(400);
    expect(JSON.stringify(five.json)).toContain("A maximum of 4 blocks with cache_control may be provided. Found 5.");
    const empty = await post({ messages: [{ role: "user", content: marked("") }] });
    expect(JSON.stringify(empty.json)).toContain("messages.0.content.0.text: cache_control cannot be set for empty text blocks");
  });
});
