import { Code, ConnectError } from "@connectrpc/connect";
import OpenAI from "openai";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceTier } from "../gen/sluice/v1/chat_pb.js";
import { simulatedText } from "../src/simulator/text.js";
import { chatClient, collect, textOf, transports, unary, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";

const ALIASES = { models: { sim: "sim-1?seed=5&tokens=6", lenient: "sim-1?seed=5&tokens=6" }, aliasOptions: { lenient: { dropUnsupportedParams: true } } };
let openaiKind: Harness;
let anthropicKind: Harness;
let geminiKind: Harness;
beforeAll(async () => {
  openaiKind = await startHarness({ kind: "openai", ...ALIASES });
  anthropicKind = await startHarness({ kind: "anthropic", ...ALIASES });
  geminiKind = await startHarness({ kind: "gemini", ...ALIASES });
});
afterAll(async () => {
  await Promise.all([openaiKind.close(), anthropicKind.close(), geminiKind.close()]);
});

const grpc = (h: Harness) => chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
const post = (h: Harness, body: object) => request(`${h.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

describe("what the OpenAI SDK sends reaches an OpenAI-kind upstream as OpenAI expects it", () => {
  it("max_tokens goes out as max_completion_tokens; penalties, bias, parallel_tool_calls, strict, service tier, user and metadata pass", async () => {
    const openai = new OpenAI({ baseURL: `${openaiKind.url}/v1`, apiKey: "unused", maxRetries: 0 });
    await openai.chat.completions.create({
      model: "sim",
      messages: [{ role: "user", content: "#sim tag=sdk-params" }],
      max_tokens: 40,
      presence_penalty: 0.5,
      frequency_penalty: 0.25,
      logit_bias: { "50256": -100 },
      parallel_tool_calls: false,
      tools: [{ type: "function", function: { name: "f", parameters: { type: "object", properties: {}, additionalProperties: false }, strict: true } }],
      service_tier: "flex",
      user: "u-7",
      metadata: { team: "search" },
      seed: 9,
      stop: ["END"],
      reasoning_effort: "low",
    });
    const record = await openaiKind.sim.records.waitFor((r) => r.tag === "sdk-params", 30_000);
    expect(record.body).toMatchObject({
      max_completion_tokens: 40,
      presence_penalty: 0.5,
      frequency_penalty: 0.25,
      logit_bias: { "50256": -100 },
      parallel_tool_calls: false,
      tools: [{ function: { name: "f", strict: true } }],
      service_tier: "flex",
      user: "u-7",
      metadata: { team: "search" },
      seed: 9,
      stop: ["END"],
      reasoning_effort: "low",
    });
    expect(record.body).not.toHaveProperty("max_tokens");
  });

  it("provider options from a gRPC caller are merged into the body of their provider kind only", async () => {
    await collect(grpc(openaiKind).streamChat(userRequest("sim", "#sim tag=options", { providerOptions: { openai: { prediction: { type: "content", content: "x" } }, anthropic: { top_k: 3 } }, serviceTier: ServiceTier.PRIORITY })));
    const record = await openaiKind.sim.records.waitFor((r) => r.tag === "options", 30_000);
    expect(record.body).toMatchObject({ prediction: { type: "content", content: "x" }, service_tier: "priority" });
    expect(record.body).not.toHaveProperty("top_k");
  });
});

describe("a parameter the provider cannot honour", () => {
  it("gRPC: INVALID_ARGUMENT naming the parameters and the provider; nothing is sent upstream", async () => {
    const before = anthropicKind.sim.records.all().length;
    const error = await collect(grpc(anthropicKind).streamChat(userRequest("sim", "hi", { logprobs: true, sampling: { seed: 4n } }))).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.InvalidArgument);
    expect(error?.rawMessage).toBe("sampling.seed, logprobs: not supported by provider simulator (anthropic); remove them, or set dropUnsupportedParams on the model alias");
    expect(anthropicKind.sim.records.all().length).toBe(before);
  });

  it("facade: 400 in OpenAI's words, with param set", async () => {
    const res = await post(anthropicKind, { model: "sim", messages: [{ role: "user", content: "hi" }], presence_penalty: 1, logprobs: true });
    expect(res.statusCode).toBe(400);
    const { error } = (await res.body.json()) as { error: { message: string; param: string; type: string } };
    expect(error).toMatchObject({ param: "presence_penalty", type: "invalid_request_error" });
    expect(error.message).toMatch(/^presence_penalty, logprobs: not supported by provider simulator \(anthropic\)/);
  });

  it("gRPC, alias that drops: the stream's start and the response header say what was dropped, and upstream never saw it", async () => {
    let header: string | null = null;
    const messages = await collect(
      grpc(anthropicKind).streamChat(userRequest("lenient", "#sim tag=dropped-grpc", { logprobs: true, sampling: { seed: 4n, temperature: 0.5 } }), {
        onHeader: (h) => (header = h.get("sluice-dropped-params")),
      }),
    );
    expect(messages[0]!.delta).toMatchObject({ case: "start", value: { droppedParams: ["sampling.seed", "logprobs"] } });
    expect(header).toBe("sampling.seed,logprobs");
    expect(textOf(messages)).toBe(simulatedText(5, 6));
    const record = await anthropicKind.sim.records.waitFor((r) => r.tag === "dropped-grpc", 30_000);
    expect(record.body).toMatchObject({ temperature: 0.5 });
    expect(record.body).not.toHaveProperty("seed");

    let unaryHeader: string | null = null;
    const whole = await grpc(anthropicKind).chat(unary(userRequest("lenient", "hi", { logprobs: true })), { onHeader: (h) => (unaryHeader = h.get("sluice-dropped-params")) });
    expect(whole.droppedParams).toEqual(["logprobs"]);
    expect(unaryHeader).toBe("logprobs");
  });

  it("facade, alias that drops: the header names the dropped parameters the OpenAI way, streaming or not", async () => {
    const body = { model: "lenient", messages: [{ role: "user", content: "hi" }], frequency_penalty: 1, metadata: { a: "b" } };
    for (const stream of [true, false]) {
      const res = await post(anthropicKind, { ...body, stream });
      expect(res.statusCode).toBe(200);
      expect(res.headers["sluice-dropped-params"], String(stream)).toBe("frequency_penalty,metadata");
      await res.body.text();
    }
  });

  it("Gemini: logit bias and a level with a budget are refused; a budget alone is sent", async () => {
    const error = await collect(grpc(geminiKind).streamChat(userRequest("sim", "hi", { reasoning: { effort: 3, budgetTokens: 100 } }))).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.rawMessage).toMatch(/^reasoning\.effort: not supported by provider simulator \(gemini\)/);
    await collect(grpc(geminiKind).streamChat(userRequest("sim", "#sim tag=budget", { reasoning: { budgetTokens: 100, includeReasoning: true } })));
    const record = await geminiKind.sim.records.waitFor((r) => r.tag === "budget", 30_000);
    expect(record.body).toMatchObject({ generationConfig: { thinkingConfig: { thinkingBudget: 100, includeThoughts: true } } });
  });
});

describe("logprobs", () => {
  it("facade, streaming: chunks carry OpenAI-shaped logprobs that spell the answer", async () => {
    const openai = new OpenAI({ baseURL: `${openaiKind.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const stream = await openai.chat.completions.create({ model: "sim", messages: [{ role: "user", content: "hi" }], stream: true, logprobs: true, top_logprobs: 2 });
    let text = "";
    const tokens: OpenAI.ChatCompletionTokenLogprob[] = [];
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      tokens.push(...(chunk.choices[0]?.logprobs?.content ?? []));
    }
    expect(tokens.map((t) => t.token).join("")).toBe(text);
    expect(tokens[0]!.top_logprobs).toHaveLength(2);
    expect(tokens[0]!.logprob).toBeLessThan(0);
  });

  it("facade, whole answer: one logprobs list", async () => {
    const openai = new OpenAI({ baseURL: `${openaiKind.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const completion = await openai.chat.completions.create({ model: "sim", messages: [{ role: "user", content: "hi" }], logprobs: true });
    const choice = completion.choices[0]!;
    expect(choice.logprobs!.content!.map((t) => t.token).join("")).toBe(choice.message.content);
  });

  it("gRPC from Gemini: LogprobsDelta messages after the text they score", async () => {
    const messages = await collect(grpc(geminiKind).streamChat(userRequest("sim", "hi", { logprobs: true, topLogprobs: 3 })));
    const tokens = messages.flatMap((m) => (m.delta.case === "logprobs" ? m.delta.value.tokens : []));
    expect(tokens.map((t) => t.token).join("")).toBe(textOf(messages));
    expect(tokens[0]!.topLogprobs).toHaveLength(3);
    const whole = await grpc(geminiKind).chat(unary(userRequest("sim", "hi", { logprobs: true })));
    expect(whole.logprobs.map((t) => t.token).join("")).toBe(whole.text);
  });
});

describe("reasoning visibility", () => {
  it("include_reasoning false: no reasoning text leaves the gateway, whatever the provider sends", async () => {
    const shown = await collect(grpc(openaiKind).streamChat(userRequest("sim", "#sim reasoning=4")));
    expect(shown.some((m) => m.delta.case === "reasoning")).toBe(true);
    const hidden = await collect(grpc(openaiKind).streamChat(userRequest("sim", "#sim reasoning=4", { reasoning: { includeReasoning: false } })));
    expect(hidden.some((m) => m.delta.case === "reasoning")).toBe(false);
    expect(textOf(hidden)).toBe(textOf(shown));
  });
});
