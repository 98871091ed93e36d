import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ResponseFormatType, Role } from "../gen/sluice/v1/chat_pb.js";
import { StreamChatRequestSchema } from "../gen/sluice/v1/chat_service_pb.js";
import { chatClient, collect, rpcFailure, transports } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";

/**
 * Issue #43 items 8 and 9, over real sockets at every edge: a request with
 * personal data in every field a provider reads (system prompt, turns, an
 * email split across two text parts, a full-width SSN, tool-call argument
 * keys and values, tool results, tool descriptions and parameter schemas,
 * the response format's description and schema, stop sequences, the
 * end-user id, the provider metadata map, provider options) reaches the
 * simulator with placeholders in each of those fields and no value
 * anywhere; under `block`, each field alone gets the request refused.
 */
const EMAIL = "alice.wong@example.com";
/** `alice.wong@example.com` cut across two text parts. */
const SPLIT = ["write to alice.wong@exa", "mple.com and note SSN １２３-４５-６７８９"] as const;
/** Substrings of the values, in every form they were sent in: none may reach the provider. */
const NEVER = ["alice.wong", "example.com", "wong@", "６７８９", "6789"];

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: {
        oa: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } },
        an: { kind: "anthropic", baseUrl: sim.anthropicBaseUrl, breaker: { failures: 10_000 } },
      },
      models: {
        "redact-oa": { provider: "oa", model: "sim-cloud?tokens=3", pii: { mode: "redact" } },
        "redact-an": { provider: "an", model: "sim-cloud?tokens=3", pii: { mode: "redact" } },
        "block-oa": { provider: "oa", model: "sim-cloud?tokens=3", pii: { mode: "block" } },
        "block-an": { provider: "an", model: "sim-cloud?tokens=3", pii: { mode: "block" } },
        "embed-redact": { provider: "oa", model: "sim-embed", pii: { mode: "redact" } },
        "embed-block": { provider: "oa", model: "sim-embed", pii: { mode: "block" } },
      },
    }),
  });
});
afterAll(() => h.close());

const PARAMETERS = { type: "object", description: `for ${EMAIL}`, properties: { who: { type: "string", description: `e.g. ${EMAIL}`, enum: [EMAIL, "other"] } } };
const PARAMETERS_SENT = { type: "object", description: "for <EMAIL_1>", properties: { who: { type: "string", description: "e.g. <EMAIL_1>", enum: ["<EMAIL_1>", "other"] } } };
const SCHEMA = { type: "object", description: `about ${EMAIL}`, properties: { text: { type: "string", description: EMAIL } } };
const SCHEMA_SENT = { type: "object", description: "about <EMAIL_1>", properties: { text: { type: "string", description: "<EMAIL_1>" } } };
const ARGUMENTS = JSON.stringify({ [EMAIL]: { owner: EMAIL } });
const ARGUMENTS_SENT = { "<EMAIL_1>": { owner: "<EMAIL_1>" } };
const SPLIT_SENT = "write to <EMAIL_1> and note SSN <US_SSN_1>";

/** The Chat Completions body with `EMAIL` in every field; `only` keeps it in that one field (the others clean). */
function chatCompletionsBody(model: string, tag: string, only?: string): Record<string, unknown> {
  const v = (field: string, dirty: string, clean: string) => (only === undefined || only === field ? dirty : clean);
  return {
    model,
    max_tokens: 8,
    messages: [
      { role: "system", content: `#sim tag=${tag}\nYou help ${v("system", EMAIL, "people")}.` },
      { role: "user", content: only === undefined || only === "split" ? SPLIT.map((text) => ({ type: "text", text })) : "hello" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: v("arguments", ARGUMENTS, "{}") } }] },
      { role: "tool", tool_call_id: "call_1", content: `found ${v("tool_result", EMAIL, "nothing")}` },
      { role: "user", content: "thanks" },
    ],
    tools: [{ type: "function", function: { name: "lookup", description: `Looks up ${v("tool_description", EMAIL, "people")}`, parameters: only === undefined || only === "parameters" ? PARAMETERS : { type: "object" } } }],
    response_format: { type: "json_schema", json_schema: { name: "reply", description: `reply to ${v("format_description", EMAIL, "them")}`, schema: only === undefined || only === "schema" ? SCHEMA : { type: "object" } } },
    stop: [v("stop", EMAIL, "END")],
    user: v("user", EMAIL, "u-1"),
    metadata: only === undefined || only === "metadata" ? { note: EMAIL, [EMAIL]: "x" } : { note: "n" },
  };
}

async function post(path: string, body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`${h.url}${path}`, { method: "POST", headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" }, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text() };
}

// biome-ignore lint/suspicious/noExplicitAny: a JSON body the assertions read by path
async function upstreamBody(tag: string): Promise<Record<string, any>> {
  const record = await h.sim.records.waitFor((r) => r.tag === tag, 30_000);
  // biome-ignore lint/suspicious/noExplicitAny: a JSON body the assertions read by path
  const body = record.body as Record<string, any>;
  const sent = JSON.stringify(body);
  for (const value of NEVER) expect(sent, `${tag}: ${value}`).not.toContain(value);
  return body;
}

/** An OpenAI-wire upstream body: each field with its placeholder, exactly. */
// biome-ignore lint/suspicious/noExplicitAny: a JSON body the assertions read by path
function expectOpenAiBody(body: Record<string, any>, tag: string, withFormat = true) {
  expect(body.messages[0]).toEqual({ role: "system", content: `#sim tag=${tag}\nYou help <EMAIL_1>.` });
  expect(body.messages[1]).toEqual({ role: "user", content: SPLIT_SENT });
  expect(JSON.parse(body.messages[2].tool_calls[0].function.arguments)).toEqual(ARGUMENTS_SENT);
  expect(body.messages[3]).toEqual({ role: "tool", tool_call_id: "call_1", content: "found <EMAIL_1>" });
  expect(body.tools[0].function).toMatchObject({ name: "lookup", description: "Looks up <EMAIL_1>", parameters: PARAMETERS_SENT });
  if (withFormat) expect(body.response_format.json_schema).toMatchObject({ name: "reply", description: "reply to <EMAIL_1>", schema: SCHEMA_SENT });
  expect(body.user).toBe("<EMAIL_1>");
}

describe("redact: every field a provider reads carries placeholders", () => {
  it("Chat Completions", async () => {
    const got = await post("/v1/chat/completions", chatCompletionsBody("redact-oa", "every-cc"));
    expect(got.status, got.text).toBe(200);
    const body = await upstreamBody("every-cc");
    expectOpenAiBody(body, "every-cc");
    expect(body.stop).toEqual(["<EMAIL_1>"]);
    expect(body.metadata).toEqual({ note: "<EMAIL_1>", "<EMAIL_1>": "x" });
  });

  it("Responses", async () => {
    const got = await post("/v1/responses", {
      model: "redact-oa",
      max_output_tokens: 16,
      instructions: `#sim tag=every-resp\nYou help ${EMAIL}.`,
      input: [
        { role: "user", content: SPLIT.map((text) => ({ type: "input_text", text })) },
        { type: "function_call", call_id: "call_1", name: "lookup", arguments: ARGUMENTS },
        { type: "function_call_output", call_id: "call_1", output: `found ${EMAIL}` },
        { role: "user", content: "thanks" },
      ],
      tools: [{ type: "function", name: "lookup", description: `Looks up ${EMAIL}`, parameters: PARAMETERS }],
      text: { format: { type: "json_schema", name: "reply", description: `reply to ${EMAIL}`, schema: SCHEMA } },
      user: EMAIL,
      metadata: { note: EMAIL },
    });
    expect(got.status, got.text).toBe(200);
    const body = await upstreamBody("every-resp");
    expectOpenAiBody(body, "every-resp");
    expect(body.metadata).toEqual({ note: "<EMAIL_1>" });
  });

  it("Messages (Anthropic upstream)", async () => {
    const got = await post("/v1/messages", {
      model: "redact-an",
      max_tokens: 16,
      system: `#sim tag=every-msg\nYou help ${EMAIL}.`,
      messages: [
        { role: "user", content: SPLIT.map((text) => ({ type: "text", text })) },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "lookup", input: JSON.parse(ARGUMENTS) }] },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_1", content: `found ${EMAIL}` },
            { type: "text", text: "thanks" },
          ],
        },
      ],
      tools: [{ name: "lookup", description: `Looks up ${EMAIL}`, input_schema: PARAMETERS }],
      stop_sequences: [EMAIL],
      metadata: { user_id: EMAIL },
    });
    expect(got.status, got.text).toBe(200);
    const body = await upstreamBody("every-msg");
    expect(JSON.stringify(body.system)).toContain("You help <EMAIL_1>.");
    expect(body.messages[0].content.map((p: { text: string }) => p.text).join("")).toBe(SPLIT_SENT);
    expect(body.messages[1].content[0]).toMatchObject({ type: "tool_use", name: "lookup", input: ARGUMENTS_SENT });
    expect(JSON.stringify(body.messages[2].content[0])).toContain("found <EMAIL_1>");
    expect(body.tools[0]).toMatchObject({ name: "lookup", description: "Looks up <EMAIL_1>", input_schema: PARAMETERS_SENT });
    expect(body.stop_sequences).toEqual(["<EMAIL_1>"]);
    expect(body.metadata).toEqual({ user_id: "<EMAIL_1>" });
  });

  it("gRPC (provider metadata and provider options too)", async () => {
    const request = create(StreamChatRequestSchema, {
      model: "redact-oa",
      messages: [
        { role: Role.SYSTEM, content: [{ part: { case: "text", value: `#sim tag=every-grpc\nYou help ${EMAIL}.` } }] },
        { role: Role.USER, content: SPLIT.map((value) => ({ part: { case: "text" as const, value } })) },
        { role: Role.ASSISTANT, toolCalls: [{ id: "call_1", name: "lookup", arguments: ARGUMENTS }] },
        { role: Role.TOOL, toolCallId: "call_1", content: [{ part: { case: "text", value: `found ${EMAIL}` } }] },
        { role: Role.USER, content: [{ part: { case: "text", value: "thanks" } }] },
      ],
      tools: [{ name: "lookup", description: `Looks up ${EMAIL}`, parameters: PARAMETERS }],
      responseFormat: { type: ResponseFormatType.JSON_SCHEMA, jsonSchema: { name: "reply", description: `reply to ${EMAIL}`, schema: SCHEMA } },
      sampling: { maxTokens: 8, stop: [EMAIL] },
      metadata: { userId: EMAIL, providerMetadata: { note: EMAIL, [EMAIL]: "x" } },
      providerOptions: { openai: { prediction: { type: "content", content: `draft for ${EMAIL}` } } },
    });
    await collect(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(request));
    const body = await upstreamBody("every-grpc");
    expectOpenAiBody(body, "every-grpc");
    expect(body.stop).toEqual(["<EMAIL_1>"]);
    expect(body.metadata).toEqual({ note: "<EMAIL_1>", "<EMAIL_1>": "x" });
    expect(body.prediction).toEqual({ type: "content", content: "draft for <EMAIL_1>" });
  });
});

describe("embeddings", () => {
  it("the inputs and the end user's id carry placeholders under redact; the id alone is refused under block", async () => {
    const got = await post("/v1/embeddings", { model: "embed-redact", input: [`#sim tag=every-embed\nmail ${EMAIL}`], user: EMAIL });
    expect(got.status, got.text.slice(0, 200)).toBe(200);
    const body = await upstreamBody("every-embed");
    expect(body.input).toEqual(["#sim tag=every-embed\nmail <EMAIL_1>"]);
    expect(body.user).toBe("<EMAIL_1>");
    const refused = await post("/v1/embeddings", { model: "embed-block", input: "nothing here", user: EMAIL });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain("(email)");
  });
});

describe("a long prompt", () => {
  it("is screened in slices on its way through the pipeline: the provider reads placeholders, on slice edges too", async () => {
    const filler = "the quarterly numbers look fine, nothing to add here. ".repeat(60_000);
    const prompt = `#sim tag=every-long\n${filler.slice(0, 131_060)} ${EMAIL} ${filler.slice(0, 400_000)} mail ${EMAIL} again`;
    const got = await post("/v1/chat/completions", { model: "redact-oa", max_tokens: 8, messages: [{ role: "user", content: prompt }] });
    expect(got.status, got.text.slice(0, 200)).toBe(200);
    const body = await upstreamBody("every-long");
    expect(body.messages[0].content.match(/<EMAIL_1>/g)).toHaveLength(2);
  });
});

describe("block: personal data in any one field refuses the request", () => {
  const FIELDS = ["system", "split", "arguments", "tool_result", "tool_description", "parameters", "format_description", "schema", "stop", "user", "metadata"];
  it("Chat Completions, field by field; a clean request passes", async () => {
    for (const field of FIELDS) {
      const got = await post("/v1/chat/completions", chatCompletionsBody("block-oa", `blocked-${field}`, field));
      expect(got.status, `${field}: ${got.text}`).toBe(400);
      expect(got.text).toMatch(/personal data or secrets \((email|email, us_ssn)\)/);
      expect(got.text).not.toContain(EMAIL);
    }
    const clean = await post("/v1/chat/completions", chatCompletionsBody("block-oa", "blocked-none", "none"));
    expect(clean.status, clean.text).toBe(200);
    expect(h.sim.records.all().some((r) => r.tag?.startsWith("blocked-") && r.tag !== "blocked-none")).toBe(false);
  });

  it("Messages: the end user's id alone; gRPC: provider metadata alone, provider options alone", async () => {
    const refused = await post("/v1/messages", { model: "block-an", max_tokens: 8, messages: [{ role: "user", content: "hi" }], metadata: { user_id: EMAIL } });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain("(email)");
    const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    for (const extra of [{ metadata: { providerMetadata: { note: EMAIL } } }, { providerOptions: { openai: { prediction: { type: "content", content: EMAIL } } } }]) {
      const failure = await rpcFailure(collect(client.streamChat(create(StreamChatRequestSchema, { model: "block-oa", messages: [{ role: Role.USER, content: [{ part: { case: "text", value: "hi" } }] }], ...extra }))));
      expect(failure.code).toBe(Code.InvalidArgument);
      expect(failure.rawMessage).toContain("(email)");
    }
  });
});
