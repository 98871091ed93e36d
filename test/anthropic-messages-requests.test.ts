import { once } from "node:events";
import { connect as h2connect } from "node:http2";
import Anthropic from "@anthropic-ai/sdk";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { simulatedText } from "../src/simulator/text.js";
import { answerFromMessage, MESSAGES_MODES, messagesClient, messageVia, WEATHER_TOOL } from "./helpers/answer-via-messages.js";
import { type Harness, startHarness } from "./helpers/harness.js";

/** count_tokens, and what the edge does with bodies it must not serve, over real sockets. */

const LIMITS = { maxRequestBytes: 256 * 1024, maxRequestElements: 2_000, maxJsonDepth: 8 };

let h: Harness;
let client: Anthropic;
beforeAll(async () => {
  h = await startHarness({ models: { sim: "sim-1?seed=11", lenient: "sim-1?seed=11" }, aliasOptions: { lenient: { dropUnsupportedParams: true } }, limits: LIMITS });
  client = messagesClient(h.url);
});
afterAll(() => h.close());

describe("messages.countTokens", () => {
  /** A prompt whose provider reports no usage: the gateway then charges what it counts itself. */
  const prompt = (words: number) => ({
    model: "sim",
    system: "You answer in one word.",
    tools: [WEATHER_TOOL],
    messages: [
      { role: "user" as const, content: `#sim usage=never tokens=3\n${"weather ".repeat(words)}` },
      { role: "assistant" as const, content: "Which city?" },
      { role: "user" as const, content: "Paris" },
    ],
  });

  for (const mode of MESSAGES_MODES) {
    it(`equals the input_tokens the gateway charges for the same prompt when the provider reports none (${mode})`, async () => {
      for (const words of [1, 200]) {
        const counted = await client.messages.countTokens(prompt(words));
        expect(counted.input_tokens).toBeGreaterThan(0);
        const message = await messageVia(client, mode, { ...prompt(words), max_tokens: 1024 });
        expect(answerFromMessage(message).text).toBe(simulatedText(11, 3));
        expect(message.usage.input_tokens, `${words} words`).toBe(counted.input_tokens);
      }
    });
  }

  it("a longer prompt counts more tokens, and the same prompt the same", async () => {
    const short = await client.messages.countTokens(prompt(1));
    const long = await client.messages.countTokens(prompt(200));
    expect(long.input_tokens).toBeGreaterThan(short.input_tokens + 100);
    expect((await client.messages.countTokens(prompt(1))).input_tokens).toBe(short.input_tokens);
  });

  it("an unknown model → 404 not_found_error, on count_tokens as on messages", async () => {
    for (const call of [() => client.messages.countTokens({ ...prompt(1), model: "claude-nope" }), () => client.messages.create({ ...prompt(1), model: "claude-nope", max_tokens: 10 })]) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(Anthropic.NotFoundError);
      expect(error).toMatchObject({ status: 404, type: "not_found_error" });
      expect((error as InstanceType<typeof Anthropic.NotFoundError>).apiMessage).toMatch(/^unknown model "claude-nope"/);
    }
  });

  it("generation settings are not part of a count: max_tokens on count_tokens is a 400 naming it", async () => {
    const res = await post({ ...prompt(1), max_tokens: 10 }, "/v1/messages/count_tokens");
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: "invalid_request_error" });
    expect(res.body.error.message).toMatch(/^max_tokens: /);
  });
});

describe("parameters an OpenAI target cannot honour", () => {
  // The Messages API takes top_k; this SDK version's types no longer list it, the body carries it all the same.
  const topK = { top_k: 5 };
  const asking = (model: string): Anthropic.MessageCreateParamsNonStreaming => ({
    model,
    max_tokens: 4096,
    ...topK,
    thinking: { type: "enabled", budget_tokens: 2048 },
    messages: [{ role: "user", content: "#sim tokens=2" }],
  });

  it("are refused with a 400 naming them in Anthropic's words", async () => {
    const error = await client.messages.create(asking("sim")).then(
      () => undefined,
      (e: unknown) => e as InstanceType<typeof Anthropic.BadRequestError>,
    );
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect(error!.apiMessage).toMatch(/^(top_k|thinking\.budget_tokens)(, (top_k|thinking\.budget_tokens))?: not supported by provider simulator/);
  });

  for (const mode of MESSAGES_MODES) {
    it(`are dropped where the alias says so, and named in sluice-dropped-params (${mode})`, async () => {
      const { data, response } = mode === "create" ? await client.messages.create(asking("lenient")).withResponse() : await client.messages.stream(asking("lenient")).withResponse();
      const message = mode === "create" ? (data as Anthropic.Message) : await (data as ReturnType<Anthropic["messages"]["stream"]>).finalMessage();
      expect(answerFromMessage(message).text).toBe(simulatedText(11, 2));
      expect(response.headers.get("sluice-dropped-params")?.split(",").sort()).toEqual(["thinking.budget_tokens", "top_k"]);
    });
  }
});

describe("over HTTP/2", () => {
  it("a stream is served whole, without HTTP/1.1's connection headers", async () => {
    const session = h2connect(h.url);
    try {
      const stream = session.request({ ":method": "POST", ":path": "/v1/messages", "content-type": "application/json" });
      stream.end(JSON.stringify({ model: "sim", max_tokens: 64, stream: true, messages: [{ role: "user", content: "#sim tokens=4" }] }));
      const [headers] = (await once(stream, "response")) as [Record<string, string>];
      expect(headers[":status"]).toBe(200);
      expect(headers["content-type"]).toMatch(/^text\/event-stream/);
      expect(headers).not.toHaveProperty("connection");
      let sse = "";
      for await (const chunk of stream) sse += (chunk as Buffer).toString();
      const texts = sse
        .split("\n\n")
        .filter((e) => e.startsWith("event: content_block_delta"))
        .map((e) => (JSON.parse(e.slice(e.indexOf("data: ") + 6)) as { delta: { text?: string } }).delta.text ?? "");
      expect(texts.join("")).toBe(simulatedText(11, 4));
      expect(sse.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n')).toBe(true);
    } finally {
      session.close();
    }
  });
});

/** A raw POST; the answer's status, Anthropic error body and headers. */
async function post(body: string | object | AsyncIterable<Uint8Array>, path = "/v1/messages") {
  const res = await request(`${h.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" || Symbol.asyncIterator in body ? (body as string) : JSON.stringify(body),
  });
  return { status: res.statusCode, headers: res.headers, body: (await res.body.json()) as { type: string; error: { type: string; message: string }; request_id: string } };
}

const user = (content: unknown) => ({ model: "sim", max_tokens: 64, messages: [{ role: "user", content }] });

/** A tool schema nested `depth` objects deep, as JSON text. */
function deepSchema(depth: number): string {
  return `${'{"type":"object","properties":{"a":'.repeat(depth - 1)}{"type":"string"}${"}}".repeat(depth - 1)}`;
}

describe("hostile bodies get Anthropic's errors, and nothing reaches the upstream", () => {
  const refused: Array<[string, () => string | object | AsyncIterable<Uint8Array>, number, string, RegExp]> = [
    ["a body over limits.maxRequestBytes, with its length declared", () => user("x".repeat(300 * 1024)), 413, "request_too_large", /limits\.maxRequestBytes/],
    [
      "a body over limits.maxRequestBytes, chunked with no length",
      () =>
        (async function* () {
          const chunk = new TextEncoder().encode(" ".repeat(16 * 1024));
          for (let i = 0; i < 32; i++) yield chunk;
        })(),
      413,
      "request_too_large",
      /limits\.maxRequestBytes/,
    ],
    ["more values than limits.maxRequestElements", () => user(Array.from({ length: 2_500 }, () => ({ type: "text", text: "a" }))), 413, "request_too_large", /limits\.maxRequestElements/],
    [
      "a tool schema nested deeper than limits.maxJsonDepth",
      () => `{"model":"sim","max_tokens":64,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"t","input_schema":${deepSchema(40)}}]}`,
      400,
      "invalid_request_error",
      /^tools\[0\]\.input_schema[.\w]*: nested deeper than 8 levels/,
    ],
    ["invalid JSON", () => '{"model":"sim",', 400, "invalid_request_error", /not valid JSON/],
    ["an unknown top-level field", () => ({ ...user("hi"), frobnicate: true }), 400, "invalid_request_error", /^frobnicate: not supported by this gateway/],
    ["a field this gateway cannot honour", () => ({ ...user([{ type: "text", text: "hi", citations: [{ type: "char_location" }] }]) }), 400, "invalid_request_error", /^messages\[0\]\.content\[0\]\.citations/],
    ["no max_tokens", () => ({ model: "sim", messages: [{ role: "user", content: "hi" }] }), 400, "invalid_request_error", /^max_tokens: /],
  ];

  for (const [name, body, status, type, message] of refused) {
    it(`${name} → ${status} ${type}`, async () => {
      const before = h.sim.records.all().length;
      const res = await post(body());
      expect(res.status).toBe(status);
      expect(res.body).toMatchObject({ type: "error", error: { type } });
      expect(res.body.error.message).toMatch(message);
      expect(res.body.request_id).toBe(res.headers["request-id"]);
      expect(h.sim.records.all().length).toBe(before);
    });
  }

  it("after all of them the gateway still serves, streamed and whole", async () => {
    for (const [, body] of refused) await post(body());
    const params = { ...user("#sim tokens=4"), model: "sim" } as Anthropic.MessageCreateParamsNonStreaming;
    for (const mode of MESSAGES_MODES) expect(answerFromMessage(await messageVia(client, mode, params)).text).toBe(simulatedText(11, 4));
  });
});
