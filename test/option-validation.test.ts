import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessageSchema, Role } from "../gen/sluice/v1/chat_pb.js";
import { type StreamChatRequest, StreamChatRequestSchema } from "../gen/sluice/v1/chat_service_pb.js";
import { PROVIDER_KINDS } from "../src/core/chat-request.js";
import { chatClient, collect, transports, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ models: { sim: "sim-1?tokens=2" } });
});
afterAll(() => h.close());

async function rpcError(req: StreamChatRequest): Promise<ConnectError | undefined> {
  return collect(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(req)).then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );
}

const big = "s".repeat(70_000);
const manyBias = Object.fromEntries(Array.from({ length: 301 }, (_, i) => [i, 1]));

describe("new request options: out-of-range and hostile values → INVALID_ARGUMENT naming the field", () => {
  const cases: Array<[string, StreamChatRequest, string]> = [
    ["top_logprobs without logprobs", userRequest("sim", "x", { topLogprobs: 2 }), "top_logprobs: requires logprobs"],
    ["top_logprobs over 20", userRequest("sim", "x", { logprobs: true, topLogprobs: 21 }), "top_logprobs: must be between 0 and 20"],
    ["presence penalty over 2", userRequest("sim", "x", { sampling: { presencePenalty: 2.5 } }), "sampling.presence_penalty: must be between -2 and 2"],
    ["frequency penalty NaN", userRequest("sim", "x", { sampling: { frequencyPenalty: Number.NaN } }), "sampling.frequency_penalty: must be between -2 and 2"],
    ["logit bias over 100", userRequest("sim", "x", { sampling: { logitBias: { 5: 101 } } }), "sampling.logit_bias: must be between -100 and 100"],
    ["301 logit biases", userRequest("sim", "x", { sampling: { logitBias: manyBias } }), "sampling.logit_bias: at most 300 entries"],
    ["budget over a million", userRequest("sim", "x", { reasoning: { budgetTokens: 1_000_001 } }), "reasoning.budget_tokens: must be between 0 and 1000000"],
    [
      "provider options for an unknown kind, with a long name",
      userRequest("sim", "x", { providerOptions: { ["k".repeat(500)]: {} } }),
      `provider_options[${JSON.stringify("k".repeat(32)).slice(0, -1)}…" (500 characters)]: keys must be a provider kind: ${PROVIDER_KINDS.join(", ")}`,
    ],
    ["17 provider metadata entries", userRequest("sim", "x", { metadata: { providerMetadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])) } }), "metadata.provider_metadata: at most 16 entries"],
    ["a metadata value over 512 characters", userRequest("sim", "x", { metadata: { providerMetadata: { k: "v".repeat(513) } } }), "metadata.provider_metadata: values must be at most 512 characters"],
    [
      "a signature over 64 KiB",
      create(StreamChatRequestSchema, {
        model: "sim",
        messages: [{ role: Role.USER, content: [{ part: { case: "text", value: "x" } }] }, create(MessageSchema, { role: Role.ASSISTANT, content: [{ part: { case: "reasoning", value: { text: "t", signature: big } } }] })],
      }),
      "messages[1].content[0].reasoning.signature: at most 65536 characters",
    ],
    [
      "reasoning in a user message",
      create(StreamChatRequestSchema, { model: "sim", messages: [{ role: Role.USER, content: [{ part: { case: "reasoning", value: { text: "t" } } }] }] }),
      "messages[0].content[0].reasoning: only assistant messages carry reasoning",
    ],
    [
      "redacted data with text",
      create(StreamChatRequestSchema, {
        model: "sim",
        messages: [
          { role: Role.USER, content: [{ part: { case: "text", value: "x" } }] },
          { role: Role.ASSISTANT, content: [{ part: { case: "reasoning", value: { text: "t", redactedData: "d" } } }] },
        ],
      }),
      "messages[1].content[0].reasoning: redacted_data excludes text and signature",
    ],
    ["provider options trying to pick the model", userRequest("sim", "x", { providerOptions: { openai: { model: "gpt-expensive" } } }), "provider_options.openai.model: set by the gateway, not by provider options"],
  ];
  for (const [name, req, message] of cases) {
    it(name, async () => {
      const error = await rpcError(req);
      expect(error?.code).toBe(Code.InvalidArgument);
      expect(error?.rawMessage).toBe(message);
    });
  }

  it("a deeply nested provider options object is refused before decoding", async () => {
    let nested: Record<string, unknown> = {};
    for (let i = 0; i < 40; i++) nested = { a: nested };
    const error = await rpcError(userRequest("sim", "x", { providerOptions: { openai: nested as never } }));
    expect(error?.code).toBe(Code.InvalidArgument);
    expect(error?.rawMessage).toMatch(/^provider_options.*nested deeper than 32 levels$/);
  });
});

describe("the facade names the OpenAI parameter", () => {
  const cases: Array<[string, object, string]> = [
    ["reasoning_effort not a level", { reasoning_effort: "extreme" }, "reasoning_effort"],
    ["top_logprobs without logprobs", { top_logprobs: 3 }, "top_logprobs"],
    ["presence_penalty out of range", { presence_penalty: -3 }, "presence_penalty"],
    ["logit_bias key not a token id", { logit_bias: { abc: 1 } }, "logit_bias"],
    ["response_format with an unknown type", { response_format: { type: "yaml" } }, "response_format.type"],
    ["json_schema with a bad name", { response_format: { type: "json_schema", json_schema: { name: "a b", schema: {} } } }, "response_format.json_schema.name"],
    ["service_tier unknown", { service_tier: "platinum" }, "service_tier"],
    ["provider_options for an unknown kind", { provider_options: { mistral: {} } }, "provider_options"],
  ];
  for (const [name, extra, param] of cases) {
    it(`${name} → 400, param ${param}`, async () => {
      const res = await request(`${h.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "sim", messages: [{ role: "user", content: "x" }], ...extra }),
      });
      expect(res.statusCode).toBe(400);
      const { error } = (await res.body.json()) as { error: { param: string; message: string } };
      expect(error.param).toBe(param);
    });
  }

  it("an unknown provider_options key is echoed cut, however long", async () => {
    const res = await request(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim", messages: [{ role: "user", content: "x" }], provider_options: { ["k".repeat(20_000)]: {} } }),
    });
    expect(res.statusCode).toBe(400);
    const { error } = (await res.body.json()) as { error: { message: string } };
    expect(error.message.length).toBeLessThan(400);
  });
});
