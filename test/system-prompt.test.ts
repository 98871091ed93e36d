import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";

/**
 * An alias's `systemPrompt` (pipeline/stages/system-prompt.ts, issue 45's
 * proof that a feature is one stage file, one line in the table and its
 * setting): every wire's upstream receives the operator's instructions
 * before the caller's own; the operator's text is not screened (a `block`
 * policy does not refuse it). That the cache key includes it is the
 * stage's fast test (test/fast/stages/system-prompt.test.ts).
 */

type Json = Record<string, unknown>;
const HOUSE = "Answer as the Sluice house style: short, plain, no emoji. Escalations go to ops@example.com.";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: {
        openai: { kind: "openai", baseUrl: baseUrlFor(sim, "openai") },
        anthropic: { kind: "anthropic", baseUrl: baseUrlFor(sim, "anthropic") },
        gemini: { kind: "gemini", baseUrl: baseUrlFor(sim, "gemini") },
      },
      models: {
        "house-openai": { provider: "openai", model: "sim-1?seed=1&tokens=3", systemPrompt: HOUSE, pii: { mode: "block" } },
        "house-anthropic": { provider: "anthropic", model: "sim-1?seed=1&tokens=3", systemPrompt: HOUSE },
        "house-gemini": { provider: "gemini", model: "sim-1?seed=1&tokens=3", systemPrompt: HOUSE },
        plain: { provider: "openai", model: "sim-1?seed=1&tokens=3" },
      },
    }),
  });
});
afterAll(() => h.close());

const chat = (model: string, messages: unknown[]) => request(`${h.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer unused" }, body: JSON.stringify({ model, messages }) });
const upstream = async (tag: string): Promise<Json> => (await h.sim.records.waitFor((r) => r.tag === tag, 30_000)).body as Json;

describe("systemPrompt", () => {
  it("an OpenAI target gets it as the first system message, before the caller's", async () => {
    const res = await chat("house-openai", [
      { role: "system", content: "You are the caller's assistant." },
      { role: "user", content: "#sim tag=house-openai\nHello" },
    ]);
    expect(res.statusCode, await res.body.text()).toBe(200);
    const messages = (await upstream("house-openai")).messages as Array<{ role: string; content: unknown }>;
    expect(messages.map((m) => m.role)).toEqual(["system", "system", "user"]);
    expect(JSON.stringify(messages[0]!.content)).toContain(HOUSE.slice(0, 40));
    expect(JSON.stringify(messages[1]!.content)).toContain("caller's assistant");
  });

  it("the operator's text is not screened: a block policy still refuses the caller's personal data, not the prompt's", async () => {
    const ok = await chat("house-openai", [{ role: "user", content: "#sim tag=house-unscreened\nHello" }]);
    expect(ok.statusCode, await ok.body.text()).toBe(200);
    const refused = await chat("house-openai", [{ role: "user", content: "#sim tag=house-refused\nMail me at jane.doe@example.org" }]);
    expect(refused.statusCode).toBe(400);
    expect(await refused.body.text()).toContain("personal data");
  });

  it("an Anthropic target gets it at the head of `system`", async () => {
    const res = await chat("house-anthropic", [
      { role: "system", content: "You are the caller's assistant." },
      { role: "user", content: "#sim tag=house-anthropic\nHello" },
    ]);
    expect(res.statusCode, await res.body.text()).toBe(200);
    const system = JSON.stringify((await upstream("house-anthropic")).system);
    expect(system).toContain(HOUSE.slice(0, 40));
    expect(system.indexOf("house style")).toBeLessThan(system.indexOf("caller's assistant"));
  });

  it("a Gemini target gets it in systemInstruction", async () => {
    const res = await chat("house-gemini", [{ role: "user", content: "#sim tag=house-gemini\nHello" }]);
    expect(res.statusCode, await res.body.text()).toBe(200);
    expect(JSON.stringify((await upstream("house-gemini")).systemInstruction)).toContain(HOUSE.slice(0, 40));
  });

  it("an alias without one sends the caller's messages as they are", async () => {
    const res = await chat("plain", [{ role: "user", content: "#sim tag=house-plain\nHello" }]);
    expect(res.statusCode, await res.body.text()).toBe(200);
    expect(((await upstream("house-plain")).messages as Array<{ role: string }>).map((m) => m.role)).toEqual(["user"]);
  });
});
