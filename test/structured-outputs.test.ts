import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import OpenAI from "openai";
import { zodResponseFormat } from "openai/helpers/zod";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ResponseFormatType } from "../gen/sluice/v1/chat_pb.js";
import { chatClient, collect, textOf, transports, userRequest } from "./helpers/clients.js";
import { type Harness, PROVIDER_KINDS, type ProviderKind, startHarness } from "./helpers/harness.js";

const Forecast = z.object({
  city: z.string(),
  days: z.number().int(),
  hourly: z.array(z.object({ hour: z.number().int(), rain: z.boolean() })),
  unit: z.enum(["c", "f"]),
});

/** Where each provider must have received the schema. */
function schemaSent(kind: ProviderKind, body: Record<string, unknown>): unknown {
  if (kind === "openai") return (body.response_format as { json_schema: { schema: unknown } }).json_schema.schema;
  if (kind === "anthropic") return (body.output_config as { format: { schema: unknown } }).format.schema;
  return (body.generationConfig as { responseJsonSchema: unknown }).responseJsonSchema;
}

const harnesses = new Map<ProviderKind, Harness>();
beforeAll(async () => {
  for (const kind of PROVIDER_KINDS) {
    harnesses.set(kind, await startHarness({ kind, models: { sim: "sim-1", lenient: "sim-1" }, aliasOptions: { lenient: { dropUnsupportedParams: true } } }));
  }
});
afterAll(async () => {
  for (const h of harnesses.values()) await h.close();
});

describe.each(PROVIDER_KINDS)("structured outputs via %s", (kind) => {
  it("the SDK's parse() helper with a zod schema gets a parsed, schema-valid answer", async () => {
    const h = harnesses.get(kind)!;
    const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const format = zodResponseFormat(Forecast, "forecast");
    const completion = await openai.chat.completions.parse({
      model: "sim",
      messages: [{ role: "user", content: `#sim tag=parse-${kind}` }],
      response_format: format,
    });
    const parsed = completion.choices[0]!.message.parsed;
    expect(Forecast.parse(parsed)).toEqual(parsed);
    const record = await h.sim.records.waitFor((r) => r.tag === `parse-${kind}`, 30_000);
    expect(schemaSent(kind, record.body as Record<string, unknown>)).toEqual(format.json_schema.schema);
  });

  it("streams the same JSON, and the stream helper parses it", async () => {
    const openai = new OpenAI({ baseURL: `${harnesses.get(kind)!.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const final = await openai.chat.completions.stream({ model: "sim", messages: [{ role: "user", content: "go" }], response_format: zodResponseFormat(Forecast, "forecast") }).finalChatCompletion();
    expect(Forecast.safeParse(final.choices[0]!.message.parsed).success).toBe(true);
  });

  it("the gRPC edge's JSON_SCHEMA format answers JSON that matches", async () => {
    const client = chatClient(transports(harnesses.get(kind)!.url)["grpc (connect-node, h2)"]!);
    const schema = zodResponseFormat(Forecast, "forecast").json_schema.schema as JsonObject;
    const messages = await collect(client.streamChat(userRequest("sim", "go", { responseFormat: { type: ResponseFormatType.JSON_SCHEMA, jsonSchema: { name: "forecast", schema } } })));
    expect(Forecast.safeParse(JSON.parse(textOf(messages))).success).toBe(true);
  });
});

describe("a model without native structured outputs", () => {
  it("Anthropic: Sluice does not emulate them; the provider's refusal reaches the caller as INVALID_ARGUMENT / 400", async () => {
    const h = harnesses.get("anthropic")!;
    const schema = zodResponseFormat(Forecast, "forecast").json_schema.schema as JsonObject;
    const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    const rpc = await collect(client.streamChat(userRequest("sim", "#sim structured=0", { responseFormat: { type: ResponseFormatType.JSON_SCHEMA, jsonSchema: { name: "forecast", schema } } }))).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(rpc?.code).toBe(Code.InvalidArgument);
    expect(rpc?.rawMessage).toBe("provider simulator rejected the request (status 400): structured outputs (a response schema) are not supported by this model");

    const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const error = await openai.chat.completions.parse({ model: "sim", messages: [{ role: "user", content: "#sim structured=0" }], response_format: zodResponseFormat(Forecast, "forecast") }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
  });
});

describe("JSON mode without a schema", () => {
  it("works where the provider has it (OpenAI, Gemini)", async () => {
    for (const kind of ["openai", "gemini"] as const) {
      const openai = new OpenAI({ baseURL: `${harnesses.get(kind)!.url}/v1`, apiKey: "unused", maxRetries: 0 });
      const completion = await openai.chat.completions.create({ model: "sim", messages: [{ role: "user", content: "go" }], response_format: { type: "json_object" } });
      expect(typeof JSON.parse(completion.choices[0]!.message.content!)).toBe("object");
    }
  });

  it("is refused for Anthropic, which has no JSON mode: 400 naming the parameter and the provider", async () => {
    const h = harnesses.get("anthropic")!;
    const before = h.sim.records.all().length;
    const res = await request(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "sim", messages: [{ role: "user", content: "go" }], response_format: { type: "json_object" } }),
    });
    expect(res.statusCode).toBe(400);
    const { error } = (await res.body.json()) as { error: { message: string; param: string } };
    expect(error.param).toBe("response_format");
    expect(error.message).toBe("response_format: not supported by provider simulator (anthropic); remove it, or set dropUnsupportedParams on the model alias");
    expect(h.sim.records.all().length).toBe(before);

    const client = chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
    const rpc = await collect(client.streamChat(userRequest("sim", "go", { responseFormat: { type: ResponseFormatType.JSON_OBJECT } }))).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(rpc?.code).toBe(Code.InvalidArgument);
    expect(rpc?.rawMessage).toMatch(/^response_format: not supported by provider simulator \(anthropic\)/);
  });

  it("an alias with dropUnsupportedParams answers without it and says so in a header", async () => {
    const h = harnesses.get("anthropic")!;
    const res = await request(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "lenient", messages: [{ role: "user", content: "#sim tokens=3 tag=json-dropped" }], response_format: { type: "json_object" } }),
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers["sluice-dropped-params"]).toBe("response_format");
    await res.body.json();
    const record = await h.sim.records.waitFor((r) => r.tag === "json-dropped", 30_000);
    expect(record.body).not.toHaveProperty("output_config");
  });
});

describe("structured outputs on the contract", () => {
  it("rejects a JSON_SCHEMA format without a schema, and a schema on another type", async () => {
    const client = chatClient(transports(harnesses.get("openai")!.url)["grpc (connect-node, h2)"]!);
    const cases = [
      [{ type: ResponseFormatType.JSON_SCHEMA }, "response_format.json_schema.schema: is required for type JSON_SCHEMA"],
      [{ type: ResponseFormatType.JSON_OBJECT, jsonSchema: { name: "x", schema: {} } }, "response_format.json_schema: only with type JSON_SCHEMA"],
      [{ type: ResponseFormatType.JSON_SCHEMA, jsonSchema: { name: "has space", schema: {} } }, "response_format.json_schema.name: must be 1-64 letters, digits, '_' or '-'"],
    ] as const;
    for (const [responseFormat, message] of cases) {
      const error = await collect(client.streamChat(userRequest("sim", "go", { responseFormat }))).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(error?.code, message).toBe(Code.InvalidArgument);
      expect(error?.rawMessage).toBe(message);
    }
  });
});

describe("cross-provider equivalence for structured outputs", () => {
  it("the same schema gives the same parsed answer whichever provider format served it", async () => {
    const answers = [];
    for (const kind of PROVIDER_KINDS) {
      const openai = new OpenAI({ baseURL: `${harnesses.get(kind)!.url}/v1`, apiKey: "unused", maxRetries: 0 });
      const completion = await openai.chat.completions.parse({ model: "sim", messages: [{ role: "user", content: "#sim seed=77" }], response_format: zodResponseFormat(Forecast, "forecast") });
      answers.push(completion.choices[0]!.message.parsed);
    }
    expect(answers[0]).toBeTruthy();
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });
});
