import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProviderKind } from "../src/core/chat-request.js";
import { simulatedText } from "../src/simulator/text.js";
import { answerViaGemini, geminiClient } from "./helpers/answer-via-gemini.js";
import { answerViaMessages, messagesClient } from "./helpers/answer-via-messages.js";
import { answerViaResponsesStream, responsesClient } from "./helpers/answer-via-responses.js";
import { answerViaFacade, answerViaGrpc } from "./helpers/answers.js";
import { type Harness, startHarness, WIRE_KINDS } from "./helpers/harness.js";
import { readFacadeEvents } from "./helpers/sse-events.js";

/**
 * One request, five edges, each through the client its callers use:
 * connect over HTTP/2 (gRPC), the openai SDK (Chat Completions and
 * Responses), @anthropic-ai/sdk (Messages) and @google/genai (Gemini). For each provider wire the
 * gateway speaks upstream, the same simulator script must give the same
 * text, reasoning, tool calls, finish reason and usage on every edge.
 */

const SCRIPTS: Array<[string, string]> = [
  ["plain text", "#sim tokens=15 seed=3"],
  ["reasoning then text", "#sim reasoning=6 tokens=5 seed=8"],
  ["text then parallel tool calls", "#sim tokens=4 tools=3 seed=5"],
  ["tool calls only", "#sim tokens=0 tools=1 seed=6"],
  ["chunked at random byte offsets, CRLF", "#sim tokens=12 seed=9 chunking=random eol=crlf"],
  ["the whole answer in one upstream write (gRPC joins deltas)", "#sim reasoning=6 tokens=40 tools=2 seed=4 chunking=bulk"],
];

const KINDS: readonly ProviderKind[] = [...WIRE_KINDS, "openai-responses"];

describe.each(KINDS)("the same request through every edge, %s upstream", (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ kind, models: { sim: "sim-1" } });
  });
  afterAll(() => h.close());

  for (const [name, prompt] of SCRIPTS) {
    it(`${name}: same text, reasoning, tool calls, finish reason and usage`, async () => {
      const viaGrpc = await answerViaGrpc(h.url, "sim", prompt);
      expect(viaGrpc.usage).toBeDefined();
      expect(viaGrpc.finish).toMatch(/^(stop|tool_calls)$/);
      expect(await answerViaFacade(h.url, "sim", prompt), "Chat Completions").toEqual(viaGrpc);
      expect(await answerViaMessages(h.url, "sim", prompt, "stream"), "Anthropic Messages").toEqual(viaGrpc);
      expect(await answerViaResponsesStream(responsesClient(h.url), "sim", prompt), "OpenAI Responses").toEqual(viaGrpc);
      expect(await answerViaGemini(h.url, "sim", prompt), "Gemini generateContent").toEqual(viaGrpc);
    });
  }

  it("compares real content (not four empty answers)", async () => {
    const answer = await answerViaGrpc(h.url, "sim", "#sim tokens=15 seed=3");
    expect(answer.text).toBe(simulatedText(3, 15));
  });
});

/**
 * The model an answer names (docs/streams.md): the alias the client asked
 * for, on every HTTP edge, streamed or not, never the upstream model string
 * (whose knobs, here the simulator's, are the operator's business).
 */
describe.each(KINDS)("every HTTP edge names the alias as the answer's model, %s upstream", (kind) => {
  const UPSTREAM = "sim-1?tokens=6&delay_ms=1";
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ kind, models: { sim: UPSTREAM } });
  });
  afterAll(() => h.close());

  it("Chat Completions: the whole answer, every chunk of a stream, and a resumed stream", async () => {
    const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "not-used", maxRetries: 0 });
    const whole = await openai.chat.completions.create({ model: "sim", messages: [{ role: "user", content: "Hi" }] });
    expect(whole.model).toBe("sim");
    const models = new Set<string>();
    for await (const chunk of await openai.chat.completions.create({ model: "sim", messages: [{ role: "user", content: "Hi" }], stream: true, stream_options: { include_usage: true } })) {
      models.add(chunk.model);
    }
    expect([...models]).toEqual(["sim"]);

    const body = JSON.stringify({ model: "sim", messages: [{ role: "user", content: "Hi" }], stream: true, stream_options: { resumable: true } });
    const first = await readFacadeEvents(`${h.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body }, (events) => events.some((e) => e.id !== undefined));
    const id = (JSON.parse(first.events[0]!.data) as { id: string }).id;
    const resumed = await readFacadeEvents(`${h.url}/v1/chat/completions/${id}/stream`, { method: "GET", headers: { "last-event-id": "0" } });
    const chunks = resumed.events.filter((e) => e.data.startsWith("{")).map((e) => JSON.parse(e.data) as { model: string });
    expect(chunks.length).toBeGreaterThan(0);
    expect(new Set(chunks.map((c) => c.model))).toEqual(new Set(["sim"]));
  });

  it("Responses: the whole answer, and every response object a stream carries", async () => {
    const client = responsesClient(h.url);
    expect((await client.responses.create({ model: "sim", input: "Hi" })).model).toBe("sim");
    const models = new Set<string>();
    for await (const event of await client.responses.create({ model: "sim", input: "Hi", stream: true })) {
      if ("response" in event) models.add(event.response.model);
    }
    expect([...models]).toEqual(["sim"]);
  });

  it("Gemini: the whole answer and every chunk of a stream (modelVersion)", async () => {
    const ai = geminiClient(h.url);
    expect((await ai.models.generateContent({ model: "sim", contents: "Hi" })).modelVersion).toBe("sim");
    const models = new Set<string | undefined>();
    for await (const chunk of await ai.models.generateContentStream({ model: "sim", contents: "Hi" })) models.add(chunk.modelVersion);
    expect([...models]).toEqual(["sim"]);
  });

  it("Messages: the whole answer and message_start", async () => {
    const client = messagesClient(h.url);
    expect((await client.messages.create({ model: "sim", max_tokens: 100, messages: [{ role: "user", content: "Hi" }] })).model).toBe("sim");
    const models: string[] = [];
    for await (const event of await client.messages.create({ model: "sim", max_tokens: 100, messages: [{ role: "user", content: "Hi" }], stream: true })) {
      if (event.type === "message_start") models.push(event.message.model);
    }
    expect(models).toEqual(["sim"]);
  });
});
