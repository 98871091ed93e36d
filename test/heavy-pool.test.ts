import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { policyFor } from "../src/compliance/pii-policy.js";
import { SCREEN_IN_POOL_CHARS, screenRequest, screenRequestPooled } from "../src/compliance/screen-request.js";
import { resolveConfig } from "../src/config/config.js";
import type { ChatRequest } from "../src/core/chat-request.js";
import { COUNT_IN_POOL_CHARS } from "../src/usage/pooled-count.js";
import { countedInputTokens } from "../src/usage/prompt-size.js";
import { installedTaskPool, installTaskPool, poolFallbacks } from "../src/workers/shared-pool.js";
import { createTaskPool, defineTask } from "../src/workers/task-pool.js";
import { type Harness, startHarness } from "./helpers/harness.js";

/**
 * Issue #47's heavy work in the pool: a long prompt's token count and PII
 * findings are the same counted and screened in a worker as inline, and a
 * ~100k-token prompt through PII redaction and routing by need (an alias
 * whose window is near the prompt, so the count runs) is served over a
 * real socket with that work done by the gateway's pool.
 */
const EMAIL = "dana.pool@example.com";
const CARD = "4111 1111 1111 1111";

/** Prose of about `chars` characters with an email, a card number and a custom-pattern id every few lines. */
function longProse(chars: number, seed: number): string {
  const lines: string[] = [];
  for (let i = 0, n = 0; n < chars; i++) {
    const line =
      i % 7 === 0 ? `Case ${seed}-${i}: write to ${EMAIL} or employee EMP-${100_000 + i}, card ${CARD} was charged twice.` : `Build ${seed}.${i} of the archive passed ${i % 40} checks; the river stone lantern orbit stays as it was.`;
    lines.push(line);
    n += line.length + 1;
  }
  return lines.join("\n");
}

const request = (texts: readonly string[]): ChatRequest => ({
  model: "m",
  messages: texts.map((text, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: [{ type: "text", text }] })),
  tools: [],
  sampling: { stop: [] },
  metadata: { labels: {} },
});

describe("heavy work in the pool gives what inline gives", () => {
  const pool = createTaskPool({ size: 1, maxQueued: 16, timeoutMs: 120_000 });
  afterAll(() => pool.close());

  it("the token count of a long prompt", async () => {
    const big = request([longProse(400_000, 1), "short question", longProse(3 * COUNT_IN_POOL_CHARS, 2)]);
    const inline = await countedInputTokens(big);
    const uninstall = installTaskPool(pool);
    try {
      const before = pool.stats().completed;
      expect(await countedInputTokens(big)).toBe(inline);
      expect(pool.stats().completed).toBe(before + 1);
    } finally {
      uninstall();
    }
    expect(inline).toBeGreaterThan(80_000);
  });

  it("the PII findings and redactions of a long prompt, custom patterns included", async () => {
    const config = resolveConfig(
      {
        providers: { p: { kind: "openai", baseUrl: "http://127.0.0.1:1" } },
        compliance: { patterns: [{ name: "employee", pattern: "EMP-\\d{6}" }] },
        models: { m: { provider: "p", model: "x", pii: { mode: "redact", detectors: ["email", "card", "employee"] } } },
      },
      {},
    );
    const policy = policyFor(config, undefined, config.models.get("m"));
    const big = request([`reach me at ${EMAIL}`, longProse(300_000, 3), longProse(SCREEN_IN_POOL_CHARS + 10, 4)]);
    const whole = screenRequest(big, policy);
    const uninstall = installTaskPool(pool);
    try {
      const before = pool.stats().completed;
      const pooled = await screenRequestPooled(big, policy);
      expect(pool.stats().completed).toBe(before + 2);
      expect(pooled.request).toEqual(whole.request);
      expect(pooled.found).toEqual(whole.found);
      expect(pooled.vault?.counts).toEqual(whole.vault?.counts);
    } finally {
      uninstall();
    }
    expect(whole.found).toMatchObject({ email: expect.any(Number), card: expect.any(Number), employee: expect.any(Number) });
    expect(JSON.stringify(whole.request)).not.toContain(EMAIL);
    // Without a pool, the same texts go in slices on this thread: the same request again.
    expect((await screenRequestPooled(big, policy)).request).toEqual(whole.request);
  });
});

describe("a pool that cannot take the work", () => {
  it("leaves it to the relay's thread: the same count, and the fallback counted", async () => {
    const pool = createTaskPool({ size: 1, maxQueued: 0, timeoutMs: 120_000 });
    const fixture = new URL("./fixtures/pool-tasks.mjs", import.meta.url).href;
    const hold = defineTask<Int32Array, string>(fixture, "./pool-tasks.mjs", "hold");
    const gate = new Int32Array(new SharedArrayBuffer(4));
    const big = request([longProse(100_000, 5)]);
    const inline = await countedInputTokens(big);
    const uninstall = installTaskPool(pool);
    try {
      const held = pool.run(hold, gate);
      const before = poolFallbacks().queue_full;
      expect(await countedInputTokens(big)).toBe(inline);
      expect(poolFallbacks().queue_full).toBe(before + 1);
      Atomics.store(gate, 0, 1);
      Atomics.notify(gate, 0);
      expect(await held).toBe("released");
    } finally {
      uninstall();
      await pool.close();
    }
  });
});

describe("a ~100k-token prompt through PII redaction and routing by need, over a real socket", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      limits: { maxRequestBytes: 8 * 1024 * 1024 },
      routing: (sim) => ({
        providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
        models: {
          guarded: { provider: "sim", model: "sim-long?tokens=3", capabilities: { contextWindow: 128_000 }, context: { strategy: "truncate", keepLastTurns: 2 }, pii: { mode: "redact" } },
        },
      }),
    });
  });
  afterAll(() => h.close());

  it("is served, redacted, with its count and screening done in the gateway's pool", async () => {
    const pool = installedTaskPool();
    expect(pool).toBeDefined();
    const before = pool!.stats().completed;
    const messages: OpenAI.ChatCompletionMessageParam[] = [];
    for (let i = 0; i < 8; i++) messages.push({ role: "user", content: longProse(48_000, 10 + i) }, { role: "assistant", content: `noted ${i}` });
    messages.push({ role: "user", content: `#sim tag=heavy-pool\nwhat did ${EMAIL} ask?` });
    const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "not-used", maxRetries: 0 });
    const stream = await openai.chat.completions.create({ model: "guarded", messages, stream: true });
    let finish: string | null | undefined;
    for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
    expect(finish).toBe("stop");

    const record = await h.sim.records.waitFor((r) => r.tag === "heavy-pool", 30_000);
    const sent = JSON.stringify(record.body);
    expect(sent).not.toContain(EMAIL);
    expect(sent).toContain("<EMAIL_1>");
    // Eight long texts screened, and their count: each a task in the pool.
    expect(pool!.stats().completed - before).toBeGreaterThanOrEqual(9);
  });
});
