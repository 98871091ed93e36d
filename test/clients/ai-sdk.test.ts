import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ClientGateway, startClientGateway, WIRES } from "./helpers/gateway.js";
import { GEMINI_EDGE, named, runnable } from "./helpers/tier.js";
import { LOOKUP_DESCRIPTION, toolTask } from "./helpers/tool-task.js";

/**
 * The AI SDK (`ai` 6) with its OpenAI (Responses and Chat models),
 * Anthropic (with cacheControl) and Google providers pointed at the
 * gateway's edges, on every upstream wire: generateText and streamText run
 * a tool loop with stopWhen: stepCountIs(3), and embed. Imported when the
 * test runs, so a Node the packages do not support only skips, by name.
 */
const OPENAI = runnable(["ai", "@ai-sdk/openai", "zod"]);
const ANTHROPIC = runnable(["ai", "@ai-sdk/anthropic", "zod"]);
const installedGoogle = runnable(["ai", "@ai-sdk/google", "zod"]);
const GOOGLE = installedGoogle.ok && !GEMINI_EDGE ? { ok: false, reason: "this branch serves no Gemini edge (src/edges/gemini)" } : installedGoogle;

type Ai = typeof import("ai");
type ModelOf = Parameters<Ai["generateText"]>[0]["model"];

async function lookupTools(result: string) {
  const { tool } = await import("ai");
  const { z } = await import("zod");
  return { lookup: tool({ description: LOOKUP_DESCRIPTION, inputSchema: z.object({ code: z.string() }), execute: () => Promise.resolve(result) }) };
}

/** Waits for the usage records of `count` more requests after `before` (recording settles after the response). */
async function recordsAfter(g: ClientGateway, before: number, count: number) {
  await g.events.until(() => g.records(g.key).length >= before + count);
  return g.records(g.key).slice(before);
}

describe.each(WIRES)("AI SDK, upstream wire %s", (wire) => {
  let g: ClientGateway;
  beforeAll(async () => {
    g = await startClientGateway(wire);
  });
  afterAll(() => g?.close());

  const models: Array<{ name: string; r: { ok: boolean; reason: string }; model: () => Promise<ModelOf>; callOptions?: Record<string, Record<string, never>>; messageOptions?: Record<string, Record<string, never>> }> = [
    // The default model (Responses) with the default store: a step after text and tool calls sends item_reference
    // items, which the gateway resolves from the response it kept (issue 46).
    {
      name: "@ai-sdk/openai default model (Responses, store default)",
      r: OPENAI,
      model: async () => (await import("@ai-sdk/openai")).createOpenAI({ baseURL: `${g.url}/v1`, apiKey: g.key })("agent"),
    },
    // store: false sends earlier output items whole.
    {
      name: "@ai-sdk/openai Responses model (store: false)",
      r: OPENAI,
      model: async () => (await import("@ai-sdk/openai")).createOpenAI({ baseURL: `${g.url}/v1`, apiKey: g.key })("agent"),
      callOptions: { openai: { store: false as never } },
    },
    { name: "@ai-sdk/openai Chat model", r: OPENAI, model: async () => (await import("@ai-sdk/openai")).createOpenAI({ baseURL: `${g.url}/v1`, apiKey: g.key }).chat("agent") },
    {
      name: "@ai-sdk/anthropic with cacheControl",
      r: ANTHROPIC,
      model: async () => (await import("@ai-sdk/anthropic")).createAnthropic({ baseURL: `${g.url}/v1`, apiKey: g.key })("agent"),
      messageOptions: { anthropic: { cacheControl: { type: "ephemeral" } as never } },
    },
    { name: "@ai-sdk/google", r: GOOGLE, model: async () => (await import("@ai-sdk/google")).createGoogleGenerativeAI({ baseURL: `${g.url}/v1beta`, apiKey: g.key })("agent") },
  ];

  for (const m of models) {
    it.runIf(m.r.ok)(named(`${m.name}: generateText runs the tool loop and the answer quotes the tool's result`, m.r), async () => {
      const { generateText, stepCountIs } = await import("ai");
      const task = toolTask();
      const before = g.records(g.key).length;
      const result = await generateText({
        model: await m.model(),
        tools: await lookupTools(task.result),
        stopWhen: stepCountIs(3),
        maxRetries: 0,
        ...(m.callOptions ? { providerOptions: m.callOptions } : {}),
        messages: [{ role: "user", content: task.prompt, ...(m.messageOptions ? { providerOptions: m.messageOptions } : {}) }],
      });
      expect(result.steps.flatMap((s) => s.toolCalls).map((c) => c.toolName)).toContain("lookup");
      expect(result.text).toContain(task.expected);
      const records = await recordsAfter(g, before, result.steps.length);
      expect(records).toHaveLength(result.steps.length);
      for (const r of records) expect(r).toMatchObject({ alias: "agent", outcome: "completed" });
    });

    it.runIf(m.r.ok)(named(`${m.name}: streamText runs the tool loop and the streamed answer quotes the tool's result`, m.r), async () => {
      const { streamText, stepCountIs } = await import("ai");
      const task = toolTask();
      const before = g.records(g.key).length;
      const errors: unknown[] = [];
      const result = streamText({
        model: await m.model(),
        tools: await lookupTools(task.result),
        stopWhen: stepCountIs(3),
        maxRetries: 0,
        onError: ({ error }) => void errors.push(error),
        ...(m.callOptions ? { providerOptions: m.callOptions } : {}),
        messages: [{ role: "user", content: task.prompt, ...(m.messageOptions ? { providerOptions: m.messageOptions } : {}) }],
      });
      let streamed = "";
      for await (const chunk of result.textStream) streamed += chunk;
      expect(errors).toEqual([]);
      expect(streamed).toContain(task.expected);
      const steps = await result.steps;
      expect(steps.length).toBeGreaterThanOrEqual(2);
      const records = await recordsAfter(g, before, steps.length);
      expect(records).toHaveLength(steps.length);
    });
  }

  it.runIf(OPENAI.ok)(named("@ai-sdk/openai default model: step 2 sends item_reference items, which the gateway resolves from the stored response", OPENAI), async () => {
    const { generateText, stepCountIs } = await import("ai");
    const { createOpenAI } = await import("@ai-sdk/openai");
    const bodies: string[] = [];
    const capture: typeof fetch = (input, init) => {
      if (typeof init?.body === "string") bodies.push(init.body);
      return fetch(input, init);
    };
    const task = toolTask();
    const result = await generateText({
      model: createOpenAI({ baseURL: `${g.url}/v1`, apiKey: g.key, fetch: capture })("agent"),
      tools: await lookupTools(task.result),
      stopWhen: stepCountIs(3),
      maxRetries: 0,
      prompt: task.prompt,
    });
    expect(result.text).toContain(task.expected);
    expect(bodies.length).toBeGreaterThanOrEqual(2);
    expect(bodies.slice(1).some((b) => b.includes('"item_reference"'))).toBe(true);
  });

  it.runIf(OPENAI.ok)(named("@ai-sdk/openai: embed returns a vector and is recorded", OPENAI), async () => {
    const { embed } = await import("ai");
    const { createOpenAI } = await import("@ai-sdk/openai");
    const before = g.records(g.key).length;
    const { embedding } = await embed({ model: createOpenAI({ baseURL: `${g.url}/v1`, apiKey: g.key }).embedding("embed"), value: "a sentence to embed", maxRetries: 0 });
    expect(embedding.length).toBeGreaterThan(0);
    expect(embedding.every((x) => Number.isFinite(x))).toBe(true);
    const [record] = await recordsAfter(g, before, 1);
    expect(record).toMatchObject({ alias: "embed" });
  });

  it.runIf(OPENAI.ok)(named("a 402 budget refusal at step 2 is thrown by generateText (not retried, not a hang)", OPENAI), async () => {
    const { generateText, stepCountIs } = await import("ai");
    const { createOpenAI } = await import("@ai-sdk/openai");
    const task = toolTask();
    const tight = g.tightKeys[0]!;
    const failed = await generateText({
      model: createOpenAI({ baseURL: `${g.url}/v1`, apiKey: tight }).chat("agent"),
      tools: await lookupTools(task.result),
      stopWhen: stepCountIs(3),
      maxRetries: 2,
      prompt: task.prompt,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(failed).toMatchObject({ statusCode: 402 });
    expect(String((failed as Error).message)).toMatch(/budget/);
    // The first request was admitted and recorded; the refusal came at the second.
    await g.events.until(() => g.records(tight).length >= 1).catch(() => undefined);
    expect(g.records(tight)).toHaveLength(1);
  });
});
