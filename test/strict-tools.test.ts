import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";

/**
 * `strict` on a function tool (the OpenAI Agents SDK sets it on every tool)
 * asks for schema adherence. A target that takes the flag gets it; Gemini,
 * which has no per-tool flag, gets the tool without it and the answer names
 * it in `sluice-dropped-params` (issue 44 §1), never a 400 — also on an
 * alias that does not drop unsupported parameters.
 */

type Json = Record<string, unknown>;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: {
        gemini: { kind: "gemini", baseUrl: baseUrlFor(sim, "gemini") },
        openai: { kind: "openai", baseUrl: baseUrlFor(sim, "openai") },
      },
      models: {
        "on-gemini": { provider: "gemini", model: "sim-1?seed=5&tokens=3&tools=1" },
        "on-openai": { provider: "openai", model: "sim-1?seed=5&tokens=3&tools=1" },
      },
    }),
  });
});
afterAll(() => h.close());

const post = (path: string, body: unknown) => request(`${h.url}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer unused" }, body: JSON.stringify(body) });
const upstream = async (tag: string): Promise<Json> => (await h.sim.records.waitFor((r) => r.tag === tag, 30_000)).body as Json;
const PARAMETERS = { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false };

describe("strict function tools", () => {
  it("Chat Completions to a Gemini target: 200, the tool sent without strict, tools[].function.strict named", async () => {
    const res = await post("/v1/chat/completions", {
      model: "on-gemini",
      messages: [{ role: "user", content: "#sim tag=strict-chat-gemini\nWeather?" }],
      tools: [{ type: "function", function: { name: "get_weather", parameters: PARAMETERS, strict: true } }],
    });
    const text = await res.body.text();
    expect(res.statusCode, text).toBe(200);
    expect(res.headers["sluice-dropped-params"]).toBe("tools[].function.strict");
    expect((JSON.parse(text) as { choices: Array<{ message: { tool_calls: Array<{ function: { name: string } }> } }> }).choices[0]!.message.tool_calls[0]!.function.name).toBe("get_weather");
    const sent = await upstream("strict-chat-gemini");
    expect(JSON.stringify(sent.tools)).toContain("get_weather");
    expect(JSON.stringify(sent.tools)).not.toContain("strict");
  });

  it("Responses, streamed, to a Gemini target: 200, tools[].strict named", async () => {
    const res = await post("/v1/responses", {
      model: "on-gemini",
      stream: true,
      input: "#sim tag=strict-responses-gemini\nWeather?",
      tools: [{ type: "function", name: "get_weather", parameters: PARAMETERS, strict: true }],
    });
    const text = await res.body.text();
    expect(res.statusCode, text).toBe(200);
    expect(res.headers["sluice-dropped-params"]).toBe("tools[].strict");
    expect(text).toContain("response.completed");
    expect(JSON.stringify((await upstream("strict-responses-gemini")).tools)).not.toContain("strict");
  });

  it("to an OpenAI target the flag is carried, nothing named", async () => {
    const res = await post("/v1/chat/completions", {
      model: "on-openai",
      messages: [{ role: "user", content: "#sim tag=strict-chat-openai\nWeather?" }],
      tools: [{ type: "function", function: { name: "get_weather", parameters: PARAMETERS, strict: true } }],
    });
    expect(res.statusCode, await res.body.text()).toBe(200);
    expect(res.headers["sluice-dropped-params"]).toBeUndefined();
    expect((await upstream("strict-chat-openai")).tools).toMatchObject([{ function: { name: "get_weather", strict: true } }]);
  });
});
