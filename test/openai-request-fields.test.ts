import OpenAI from "openai";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";

/**
 * Every top-level field the official SDK declares, each with a value its
 * type allows: `satisfies Required<…>` fails to compile when the SDK adds
 * or removes one, so the facade's answer to each is checked below.
 */
const EVERY_FIELD = {
  model: "sim",
  messages: [{ role: "user", content: "#sim tag=every-field tokens=2" }],
  audio: { voice: "alloy", format: "mp3" },
  frequency_penalty: 0.1,
  function_call: "auto",
  functions: [{ name: "legacy", parameters: { type: "object", properties: {} } }],
  logit_bias: { "50256": -1 },
  logprobs: true,
  max_completion_tokens: 50,
  max_tokens: 50,
  metadata: { team: "search" },
  modalities: ["text"],
  moderation: { model: "omni-moderation-latest" },
  n: 1,
  parallel_tool_calls: true,
  prediction: { type: "content", content: "draft" },
  presence_penalty: 0.1,
  prompt_cache_key: "k-1",
  prompt_cache_options: { mode: "explicit" },
  prompt_cache_retention: "24h",
  reasoning_effort: "low",
  response_format: { type: "text" },
  safety_identifier: "user-hash",
  seed: 3,
  service_tier: "default",
  stop: ["END"],
  store: false,
  stream: false,
  stream_options: { include_usage: true },
  temperature: 0.5,
  tool_choice: "auto",
  tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } }],
  top_logprobs: 2,
  top_p: 0.9,
  user: "u-1",
  verbosity: "low",
  web_search_options: { search_context_size: "low" },
} satisfies Required<OpenAI.ChatCompletionCreateParamsNonStreaming>;

/** The fields the facade acts on: every other declared field must come back in sluice-dropped-params. */
const ACTED_ON = new Set([
  "model",
  "messages",
  "frequency_penalty",
  "logit_bias",
  "logprobs",
  "max_completion_tokens",
  "max_tokens",
  "metadata",
  "n",
  "parallel_tool_calls",
  "presence_penalty",
  "prompt_cache_key",
  "safety_identifier",
  "reasoning_effort",
  "response_format",
  "seed",
  "service_tier",
  "stop",
  "stream",
  "stream_options",
  "temperature",
  "tool_choice",
  "tools",
  "top_logprobs",
  "top_p",
  "user",
]);
const NOT_ACTED_ON = Object.keys(EVERY_FIELD).filter((field) => !ACTED_ON.has(field));

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: {
        simulator: { kind: "openai", baseUrl: baseUrlFor(sim, "openai") },
        claude: { kind: "anthropic", baseUrl: baseUrlFor(sim, "anthropic") },
      },
      models: {
        sim: { provider: "simulator", model: "sim-1?seed=2&tokens=2" },
        lenient: { provider: "claude", model: "sim-1?seed=2&tokens=2", dropUnsupportedParams: true },
      },
    }),
  });
});
afterAll(async () => {
  await h.close();
});

const sdk = () => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "unused", maxRetries: 0 });
const post = (body: Record<string, unknown>) => request(`${h.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const dropped = (header: string | string[] | null | undefined) => (typeof header === "string" ? header.split(",").sort() : []);

describe("every field the openai SDK declares is acted on or named in sluice-dropped-params", () => {
  it("non-streaming: all of them in one request → 200, the ones not acted on listed", async () => {
    const { response, data } = await sdk().chat.completions.create(EVERY_FIELD).withResponse();
    expect(response.status).toBe(200);
    expect(data.choices[0]!.message.content).not.toBe("");
    expect(dropped(response.headers.get("sluice-dropped-params"))).toEqual([...NOT_ACTED_ON].sort());
    // And the ones acted on reached the upstream.
    const record = await h.sim.records.waitFor((r) => r.tag === "every-field", 30_000);
    expect(record.body).toMatchObject({ seed: 3, top_p: 0.9, user: "u-1", logprobs: true, top_logprobs: 2, reasoning_effort: "low", prompt_cache_key: "k-1", safety_identifier: "user-hash" });
    for (const field of NOT_ACTED_ON) expect(record.body).not.toHaveProperty(field);
  });

  it("streaming: the same list in the response headers", async () => {
    const { response, data } = await sdk()
      .chat.completions.create({ ...EVERY_FIELD, messages: [{ role: "user", content: "#sim tokens=2" }], stream: true })
      .withResponse();
    let text = "";
    for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).not.toBe("");
    expect(dropped(response.headers.get("sluice-dropped-params"))).toEqual([...NOT_ACTED_ON].sort());
  });

  it("null is OpenAI's 'not set': a declared field sent as null is not listed", async () => {
    const res = await post({ model: "sim", messages: [{ role: "user", content: "hi" }], store: null, audio: null, verbosity: "high" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["sluice-dropped-params"]).toBe("verbosity");
    await res.body.dump();
  });

  it("the facade's list and the alias's dropped parameters come in one header", async () => {
    const res = await post({ model: "lenient", messages: [{ role: "user", content: "hi" }], store: true, seed: 4 });
    expect(res.statusCode).toBe(200);
    expect(dropped(res.headers["sluice-dropped-params"])).toEqual(["seed", "store"]);
    await res.body.dump();
    const { response } = await sdk()
      .chat.completions.create({ model: "lenient", messages: [{ role: "user", content: "hi" }], stream: true, store: true, seed: 4 })
      .withResponse();
    expect(dropped(response.headers.get("sluice-dropped-params"))).toEqual(["seed", "store"]);
  });
});

describe("carried fields: forwarded to targets that take them, named where they go nowhere", () => {
  it("prompt_cache_key and safety_identifier reach an OpenAI target; to an Anthropic target they are named, and cache_control is kept there", async () => {
    const body = {
      messages: [{ role: "user", content: [{ type: "text", text: "#sim tag=carried-chat tokens=2", cache_control: { type: "ephemeral" } }] }],
      prompt_cache_key: "k-2",
      safety_identifier: "s-2",
    };
    const toOpenAi = await post({ ...body, model: "sim" });
    expect(toOpenAi.statusCode).toBe(200);
    expect(dropped(toOpenAi.headers["sluice-dropped-params"])).toEqual(["cache_control"]);
    await toOpenAi.body.dump();
    const toAnthropic = await post({ ...body, model: "lenient", messages: [{ role: "user", content: [{ type: "text", text: "#sim tag=carried-chat-a tokens=2", cache_control: { type: "ephemeral" } }] }] });
    expect(toAnthropic.statusCode).toBe(200);
    expect(dropped(toAnthropic.headers["sluice-dropped-params"])).toEqual(["prompt_cache_key", "safety_identifier"]);
    await toAnthropic.body.dump();
    const openAiRecord = await h.sim.records.waitFor((r) => r.tag === "carried-chat", 30_000);
    expect(openAiRecord.body).toMatchObject({ prompt_cache_key: "k-2", safety_identifier: "s-2" });
    expect(JSON.stringify(openAiRecord.body)).not.toContain("cache_control");
    const anthropicRecord = await h.sim.records.waitFor((r) => r.tag === "carried-chat-a", 30_000);
    expect(anthropicRecord.body).toMatchObject({ messages: [{ role: "user", content: [{ type: "text", cache_control: { type: "ephemeral" } }] }] });
    expect(anthropicRecord.body).not.toHaveProperty("prompt_cache_key");
  });
});

describe("a top-level field the SDK does not declare is refused, naming it", () => {
  it("the SDK's extra body field mcp_servers → BadRequestError with param mcp_servers; nothing is sent upstream", async () => {
    const before = h.sim.records.all().length;
    const error = await sdk()
      .chat.completions.create({
        model: "sim",
        messages: [{ role: "user", content: "hi" }],
        // @ts-expect-error: not a Chat Completions parameter (the Responses API's remote MCP tools)
        mcp_servers: [{ type: "url", url: "https://mcp.example/sse", name: "tools" }],
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const bad = error as InstanceType<typeof OpenAI.BadRequestError>;
    expect(bad.status).toBe(400);
    expect(bad.param).toBe("mcp_servers");
    expect(bad.type).toBe("invalid_request_error");
    expect(bad.message).toMatch(/mcp_servers: unrecognized request argument/);
    expect(h.sim.records.all().length).toBe(before);
  });

  it("raw: every unknown field is named, the first as param; streaming requests too", async () => {
    for (const stream of [false, true]) {
      const res = await post({ model: "sim", messages: [{ role: "user", content: "hi" }], stream, mcp_servers: [], temprature: 0.2 });
      expect(res.statusCode).toBe(400);
      expect(res.headers["content-type"]).toMatch(/application\/json/);
      const body = (await res.body.json()) as { error: { message: string; type: string; param: string | null } };
      expect(body.error).toMatchObject({ type: "invalid_request_error", param: "mcp_servers" });
      expect(body.error.message).toMatch(/^mcp_servers, temprature: unrecognized request arguments/);
    }
  });

  it("a flood of unknown fields names five and counts the rest", async () => {
    const fields = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`x${i}`, i]));
    const res = await post({ model: "sim", messages: [{ role: "user", content: "hi" }], ...fields });
    expect(res.statusCode).toBe(400);
    const body = (await res.body.json()) as { error: { message: string; param: string } };
    expect(body.error.param).toBe("x0");
    expect(body.error.message).toMatch(/^x0, x1, x2, x3, x4: unrecognized request arguments \(and 35 more\)/);
  });
});
