import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EmbeddingService, EmbedInputSchema, EmbedRequestSchema } from "../gen/sluice/v1/embedding_service_pb.js";
import { embedText } from "../src/simulator/embedding-vectors.js";
import { transports } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";

let h: Harness;
let openai: OpenAI;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: {
        oa: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } },
        gem: { kind: "gemini", baseUrl: sim.geminiBaseUrl, breaker: { failures: 10_000 } },
        claude: { kind: "anthropic", baseUrl: sim.anthropicBaseUrl },
      },
      models: {
        embed: { provider: "oa", model: "sim-embed" },
        "gemini-embed": { provider: "gem", model: "sim-embed?dims=64" },
        "chat-only": { provider: "claude", model: "sim-1" },
        // The Anthropic target is skipped; the failing OpenAI one fails over to Gemini.
        fallback: {
          targets: [
            { provider: "claude", model: "sim-1" },
            { provider: "oa", model: "sim-embed?fail=status&status=503" },
            { provider: "gem", model: "sim-embed" },
          ],
        },
      },
    }),
  });
  openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "not-used", maxRetries: 0 });
});
afterAll(() => h.close());

const texts = ["How do I reset my password?", "How can I reset my password?", "Quarterly revenue grew"];

function expectClose(actual: ArrayLike<number>, expected: readonly number[]): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) expect(actual[i]).toBeCloseTo(expected[i]!, 6);
}

describe("POST /v1/embeddings with the official openai SDK", () => {
  it("returns float vectors in input order, with usage", async () => {
    const res = await openai.embeddings.create({ model: "embed", input: texts, encoding_format: "float" });
    expect(res.object).toBe("list");
    expect(res.model).toBe("embed");
    expect(res.data.map((d) => d.index)).toEqual([0, 1, 2]);
    res.data.forEach((d, i) => expectClose(d.embedding, embedText(texts[i]!)));
    expect(res.usage).toEqual({ prompt_tokens: 15, total_tokens: 15 });
  });

  it("returns base64 (the SDK's default, decoded by the SDK) and honours dimensions", async () => {
    const decoded = await openai.embeddings.create({ model: "embed", input: texts[0]!, dimensions: 32 });
    expectClose(decoded.data[0]!.embedding, embedText(texts[0]!, 32));
    const raw = await openai.embeddings.create({ model: "embed", input: [texts[1]!], encoding_format: "base64" });
    const bytes = Buffer.from(raw.data[0]!.embedding as unknown as string, "base64");
    expectClose(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4), embedText(texts[1]!));
  });

  it("takes token arrays on an OpenAI-compatible target", async () => {
    const res = await openai.embeddings.create({ model: "embed", input: [[1, 2, 3], [7]], encoding_format: "float" });
    expect(res.data).toHaveLength(2);
    expect(res.usage.prompt_tokens).toBe(4);
  });

  it("serves a Gemini target (batchEmbedContents), counting the tokens itself", async () => {
    const res = await openai.embeddings.create({ model: "gemini-embed", input: texts.slice(0, 2), encoding_format: "float" });
    res.data.forEach((d, i) => expectClose(d.embedding, embedText(texts[i]!, 64)));
    expect(res.usage.prompt_tokens).toBeGreaterThan(0);
  });

  it("skips a target that cannot embed and fails over past a failing one", async () => {
    const res = await openai.embeddings.create({ model: "fallback", input: "failover", encoding_format: "float" });
    expectClose(res.data[0]!.embedding, embedText("failover"));
  });

  it("refuses what cannot be served with 400s that say why, and unknown aliases with 404", async () => {
    const cases: Array<[Record<string, unknown>, number, RegExp]> = [
      [{ model: "chat-only", input: "x" }, 400, /cannot embed: its providers \(anthropic\) have no embeddings API/],
      [{ model: "gemini-embed", input: [[1, 2]] }, 400, /embeds text only/],
      [{ model: "embed", input: [] }, 400, /at least one input/],
      [{ model: "embed", input: ["ok", ""] }, 400, /input 1 is empty/],
      [{ model: "embed", input: "x", dimensions: 0 }, 400, /dimensions/],
      [{ model: "embed", input: "x", encoding_format: "hex" }, 400, /encoding_format/],
      [{ model: "embed", input: Array.from({ length: 2_049 }, () => "x") }, 400, /at most 2048/],
      [{ model: "nope", input: "x" }, 404, /unknown model/],
    ];
    for (const [body, status, message] of cases) {
      const res = await fetch(`${h.url}/v1/embeddings`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(status);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(message);
    }
  });

  it("writes one access line with the alias, the target and the tokens", async () => {
    const requestId = `emb-${Date.now()}`;
    const res = await fetch(`${h.url}/v1/embeddings`, { method: "POST", headers: { "content-type": "application/json", "x-request-id": requestId }, body: JSON.stringify({ model: "embed", input: "one two three" }) });
    expect(res.status).toBe(200);
    const line = await h.waitForLog((l) => l.event === "access" && l.requestId === requestId);
    expect(line).toMatchObject({ edge: "openai", route: "/v1/embeddings", status: 200, code: "ok", alias: "embed", provider: "oa", model: "sim-embed", attempts: 1, inputTokens: 3 });
  });
});

describe("sluice.v1.EmbeddingService/Embed", () => {
  for (const name of ["grpc (connect-node, h2)", "connect (connect-node, HTTP/1.1)"]) {
    it(`answers over ${name}`, async () => {
      const client = createClient(EmbeddingService, transports(h.url)[name]!);
      const res = await client.embed(create(EmbedRequestSchema, { model: "gemini-embed", inputs: texts.map((text) => create(EmbedInputSchema, { input: { case: "text", value: text } })) }));
      expect(res.embeddings).toHaveLength(3);
      res.embeddings.forEach((e, i) => expectClose(e.values, embedText(texts[i]!, 64)));
      expect(res).toMatchObject({ model: "gemini-embed", provider: "gem", providerModel: "sim-embed?dims=64", estimated: true });
      expect(res.inputTokens).toBeGreaterThan(0n);
    });
  }

  it("INVALID_ARGUMENT for an alias that cannot embed, NOT_FOUND for an unknown one", async () => {
    const client = createClient(EmbeddingService, transports(h.url)["grpc (connect-node, h2)"]!);
    const input = [create(EmbedInputSchema, { input: { case: "text", value: "x" } })];
    const refused = await client.embed(create(EmbedRequestSchema, { model: "chat-only", inputs: input })).catch((e: unknown) => ConnectError.from(e));
    expect(refused).toMatchObject({ code: Code.InvalidArgument });
    const unknown = await client.embed(create(EmbedRequestSchema, { model: "nope", inputs: input })).catch((e: unknown) => ConnectError.from(e));
    expect(unknown).toMatchObject({ code: Code.NotFound });
    const empty = await client.embed(create(EmbedRequestSchema, { model: "embed", inputs: [create(EmbedInputSchema, {})] })).catch((e: unknown) => ConnectError.from(e));
    expect(empty).toMatchObject({ code: Code.InvalidArgument });
  });
});
