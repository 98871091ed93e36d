import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";

/**
 * Issue 44 §7, thinking-signature hygiene on the Messages edge: signed
 * thinking an Anthropic client sends back verifies only with the provider
 * and model that issued it. When the conversation goes elsewhere (another
 * alias, or failover), those blocks are left out before the request
 * leaves; a thinking block with an empty signature is dropped, not refused.
 */

type Json = Record<string, unknown>;
const TOOL: Anthropic.Tool = { name: "lookup", description: "Look up", input_schema: { type: "object", properties: { city: { type: "string" } } } };

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: {
        first: { kind: "anthropic", baseUrl: baseUrlFor(sim, "anthropic") },
        second: { kind: "anthropic", baseUrl: baseUrlFor(sim, "anthropic") },
      },
      models: {
        a: { provider: "first", model: "sim-1" },
        b: { provider: "second", model: "sim-1" },
        // Its first target always fails: every answer comes from the second, which failover reaches after it.
        fo: {
          targets: [
            { provider: "first", model: "sim-1?fail=status&status=503&script=fo-primary" },
            { provider: "second", model: "sim-1?script=fo-backup" },
          ],
        },
      },
    }),
  });
});
afterAll(() => h.close());

const client = () => new Anthropic({ baseURL: h.url, apiKey: "unused", maxRetries: 0 });
const ask = (model: string, messages: Anthropic.MessageParam[]) => client().messages.create({ model, max_tokens: 4096, thinking: { type: "enabled", budget_tokens: 2048 }, tools: [TOOL], messages });
const thinkingSent = async (tag: string): Promise<Json[]> => {
  const body = (await h.sim.records.waitFor((r) => r.tag === tag, 30_000)).body as { messages: Array<{ content: Json[] | string }> };
  return body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content.filter((b) => b.type === "thinking" || b.type === "redacted_thinking") : []));
};

describe("signed thinking from another provider is dropped before the request leaves", () => {
  it("the tool turn goes back to the alias that answered with its thinking, and to another alias without it; both are served", async () => {
    const first: Anthropic.MessageParam = { role: "user", content: "#sim reasoning=4 tokens=2 tools=1 seed=31" };
    const answer = await ask("a", [first]);
    const call = answer.content.find((b): b is Anthropic.ToolUseBlock => b.type === "tool_use");
    expect(answer.content.some((b) => b.type === "thinking" && b.signature !== "")).toBe(true);
    expect(call).toBeDefined();
    const next = (tag: string): Anthropic.MessageParam[] => [
      first,
      { role: "assistant", content: answer.content as Anthropic.ContentBlockParam[] },
      // The directive rides in the result: a text block beside it would start a new user turn, ending the tool loop.
      { role: "user", content: [{ type: "tool_result", tool_use_id: call!.id, content: `21 degrees\n#sim tools=0 tag=${tag}` }] },
    ];

    expect((await ask("a", next("same-issuer"))).stop_reason).toBe("end_turn");
    expect((await thinkingSent("same-issuer")).length).toBeGreaterThan(0);

    expect((await ask("b", next("other-provider"))).stop_reason).toBe("end_turn");
    expect(await thinkingSent("other-provider")).toEqual([]);
  });

  it("on failover: the target that did not issue the thinking is sent none, the one that did gets it back", async () => {
    const first: Anthropic.MessageParam = { role: "user", content: "#sim reasoning=4 tokens=2 tools=1 seed=32" };
    const answer = await ask("fo", [first]);
    const call = answer.content.find((b): b is Anthropic.ToolUseBlock => b.type === "tool_use");
    expect(call).toBeDefined();
    const next = await ask("fo", [
      first,
      { role: "assistant", content: answer.content as Anthropic.ContentBlockParam[] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: call!.id, content: "21 degrees\n#sim tools=0 tag=failover-turn" }] },
    ]);
    expect(next.stop_reason).toBe("end_turn");
    const sent = h.sim.records.all().filter((r) => r.tag === "failover-turn");
    const thinking = (body: unknown) => JSON.stringify(body).includes('"type":"thinking"');
    const primary = sent.filter((r) => r.model.includes("fo-primary"));
    const backup = sent.filter((r) => r.model.includes("fo-backup"));
    expect(primary.length).toBeGreaterThan(0);
    expect(backup).toHaveLength(1);
    for (const r of primary) expect(thinking(r.body)).toBe(false);
    expect(thinking(backup[0]!.body)).toBe(true);
  });

  it("a thinking block with an empty signature (a resumed transcript) is dropped, not refused", async () => {
    const message = await ask("a", [
      { role: "user", content: "hello" },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "Let me think.", signature: "" },
          { type: "text", text: "Hi." },
        ],
      },
      { role: "user", content: "#sim tools=0 tokens=2 tag=unsigned" },
    ]);
    expect(message.stop_reason).toBe("end_turn");
    expect(await thinkingSent("unsigned")).toEqual([]);
  });
});
