import OpenAI from "openai";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";

/**
 * A reasoning effort reaches each Claude model in the one thinking form it
 * accepts. The simulator refuses the wrong form as Anthropic does (adaptive
 * before Claude 4.6, `enabled` from 4.7), so a wrong choice is a 400 here.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => {
      const anthropic = { kind: "anthropic" as const, baseUrl: baseUrlFor(sim, "anthropic"), breaker: { failures: 10_000 } };
      return {
        providers: { claude: anthropic, forced: { ...anthropic, thinking: "adaptive" } },
        models: {
          haiku: { provider: "claude", model: "claude-haiku-4-5-20251001" },
          sonnet45: { provider: "claude", model: "claude-sonnet-4-5" },
          opus46: { provider: "claude", model: "claude-opus-4-6" },
          opus47: { provider: "claude", model: "claude-opus-4-7" },
          // The operator's word over the table: a target's, then its provider's.
          "opus46-budget": { targets: [{ provider: "claude", model: "claude-opus-4-6", thinking: "budget" }] },
          "haiku-forced": { provider: "forced", model: "claude-haiku-4-5" },
          "haiku-forced-back": { targets: [{ provider: "forced", model: "claude-haiku-4-5", thinking: "budget" }] },
        },
      };
    },
  });
});
afterAll(async () => {
  await h.close();
});

const sdk = () => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "unused", maxRetries: 0 });

/** What the simulator received for one tagged OpenAI SDK call through the facade. */
async function sent(alias: string, tag: string, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}): Promise<Record<string, unknown>> {
  await sdk().chat.completions.create({ model: alias, messages: [{ role: "user", content: `#sim tag=${tag} reasoning=3 tokens=3` }], ...extra });
  return (await h.sim.records.waitFor((r) => r.tag === tag, 30_000)).body as Record<string, unknown>;
}

describe("reasoning_effort on an Anthropic target", () => {
  it("Claude Haiku 4.5 gets thinking enabled with budget_tokens, no adaptive and no effort word", async () => {
    const body = await sent("haiku", "haiku-high", { reasoning_effort: "high" });
    expect(body.thinking).toEqual({ type: "enabled", budget_tokens: 16_384 });
    expect(body.max_tokens).toBe(16_384 + 4096);
    expect(body).not.toHaveProperty("output_config");
  });

  it("Sonnet 4.5: each effort is its own budget", async () => {
    const budgets = [];
    for (const effort of ["minimal", "low", "medium", "high", "xhigh"] as const) {
      budgets.push(((await sent("sonnet45", `sonnet45-${effort}`, { reasoning_effort: effort })).thinking as { budget_tokens: number }).budget_tokens);
    }
    expect(budgets).toEqual([1024, 1024, 4096, 16_384, 32_768]);
  });

  it("the caller's max_tokens stays: the budget is cut to half of it, never under 1,024", async () => {
    const half = await sent("haiku", "haiku-capped", { reasoning_effort: "high", max_tokens: 3000 });
    expect(half).toMatchObject({ max_tokens: 3000, thinking: { type: "enabled", budget_tokens: 1500 } });
    const floor = await sent("haiku", "haiku-floor", { reasoning_effort: "medium", max_completion_tokens: 1500 });
    expect(floor).toMatchObject({ max_tokens: 1500, thinking: { type: "enabled", budget_tokens: 1024 } });
  });

  it("a max_tokens with no room for the 1,024-token floor is a 400 naming max_tokens; nothing is sent", async () => {
    const before = h.sim.records.all().length;
    const error = await sdk()
      .chat.completions.create({ model: "haiku", messages: [{ role: "user", content: "hi" }], reasoning_effort: "low", max_tokens: 1024 })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("max_tokens");
    expect((error as Error).message).toMatch(/max_tokens: must be above 1024/);
    expect(h.sim.records.all().length).toBe(before);
  });

  it("Claude Opus 4.6 and 4.7 get adaptive thinking with output_config.effort", async () => {
    for (const alias of ["opus46", "opus47"]) {
      const body = await sent(alias, `${alias}-high`, { reasoning_effort: "high" });
      expect(body.thinking).toEqual({ type: "adaptive" });
      expect(body.output_config).toEqual({ effort: "high" });
      expect(body.max_tokens).toBe(4096);
    }
  });

  it("a target's thinking: budget sends Opus 4.6 a budget instead", async () => {
    const body = await sent("opus46-budget", "opus46-budget", { reasoning_effort: "medium" });
    expect(body.thinking).toEqual({ type: "enabled", budget_tokens: 4096 });
    expect(body).not.toHaveProperty("output_config");
  });

  it("a provider's thinking: adaptive sends Haiku adaptive (which Anthropic refuses), and a target's budget wins over it", async () => {
    const error = await sdk()
      .chat.completions.create({ model: "haiku-forced", messages: [{ role: "user", content: "#sim tag=forced" }], reasoning_effort: "low" })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toMatch(/thinking\.type\.adaptive" is not supported for this model/);
    const body = await sent("haiku-forced-back", "forced-back", { reasoning_effort: "low" });
    expect(body.thinking).toEqual({ type: "enabled", budget_tokens: 1024 });
  });

  it("no effort, no thinking: nothing about thinking is sent", async () => {
    const body = await sent("haiku", "haiku-none-asked");
    expect(body).not.toHaveProperty("thinking");
    expect(body).not.toHaveProperty("output_config");
  });
});

describe("the simulator's Anthropic endpoint keeps Anthropic's thinking rules", () => {
  const post = (body: Record<string, unknown>) => request(`${h.sim.anthropicBaseUrl}/messages`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const ask = (model: string, fields: Record<string, unknown>) => post({ model, max_tokens: 4096, messages: [{ role: "user", content: "hi" }], ...fields });

  it.each([
    ["claude-haiku-4-5", { thinking: { type: "adaptive" } }, 400],
    ["claude-sonnet-4-5", { thinking: { type: "enabled", budget_tokens: 2048 }, output_config: { effort: "low" } }, 400],
    ["claude-opus-4-5", { thinking: { type: "enabled", budget_tokens: 2048 }, output_config: { effort: "low" } }, 200],
    ["claude-haiku-4-5", { thinking: { type: "enabled", budget_tokens: 1000 } }, 400],
    ["claude-haiku-4-5", { thinking: { type: "enabled", budget_tokens: 4096 } }, 400],
    ["claude-haiku-4-5", { thinking: { type: "enabled", budget_tokens: 2048 } }, 200],
    ["claude-opus-4-6", { thinking: { type: "adaptive" }, output_config: { effort: "max" } }, 200],
    ["claude-opus-4-6", { thinking: { type: "enabled", budget_tokens: 2048 } }, 200],
    ["claude-opus-4-7", { thinking: { type: "enabled", budget_tokens: 2048 } }, 400],
    ["claude-opus-4-7", { thinking: { type: "adaptive" }, output_config: { effort: "high" } }, 200],
  ])("%s with %j → %i", async (model, fields, status) => {
    const res = await ask(model, fields);
    const text = await res.body.text();
    expect(res.statusCode, text).toBe(status);
    if (status === 400) expect(JSON.parse(text)).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
  });

  // A tool-use turn replayed without a thinking block: with `enabled` the model always thinks first, so the turn
  // was altered (400); with `adaptive` thinking is optional for the model, so it is a turn that skipped it (200).
  // Claude Code sends adaptive on every request, also to a model that did not think on the turn before.
  it.each([
    [{ type: "enabled", budget_tokens: 2048 }, 400],
    [{ type: "adaptive" }, 200],
  ])("a tool-use turn without thinking replayed with thinking %j → %i", async (thinking, status) => {
    const res = await post({
      model: "sim-1",
      max_tokens: 4096,
      thinking,
      messages: [
        { role: "user", content: "Run it" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Running." },
            { type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "true" } },
          ],
        },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "ok" }] },
      ],
    });
    const text = await res.body.text();
    expect(res.statusCode, text).toBe(status);
    if (status === 400) expect(JSON.parse(text).error.message).toMatch(/must start with a thinking block/);
  });

  it("under thinking enabled the model always thinks, knob or not, so its own tool turn replays", async () => {
    const thinking = { type: "enabled", budget_tokens: 2048 };
    const prompt = { role: "user", content: "Run it" };
    const tools = [{ name: "Bash", input_schema: { type: "object", properties: { command: { type: "string" } } } }];
    const first = await post({ model: "sim-1?tools=1&tokens=2", max_tokens: 4096, thinking, tools, messages: [prompt] });
    const answer = (await first.body.json()) as { content: Array<{ type: string; id?: string }> };
    expect(answer.content.map((b) => b.type)).toEqual(["thinking", "text", "tool_use"]);
    const call = answer.content.find((b) => b.type === "tool_use")!;
    const second = await post({
      model: "sim-1?tools=1&tokens=2",
      max_tokens: 4096,
      thinking,
      tools,
      messages: [prompt, { role: "assistant", content: answer.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "ok" }] }],
    });
    const text = await second.body.text();
    expect(second.statusCode, text).toBe(200);
    expect(JSON.parse(text).content.at(-1)).toEqual({ type: "text", text: "Bash returned: ok" });
  });
});
