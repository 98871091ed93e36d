import OpenAI from "openai";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cosine, DEFAULT_EMBEDDING_DIMENSIONS, embedText, stem, words } from "../src/simulator/embedding-vectors.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator();
});
afterAll(() => sim.close());

async function post(path: string, body: unknown) {
  const res = await request(`${sim.origin}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

const norm = (v: readonly number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

describe("the simulator's embedding model", () => {
  it("gives the same unit vector for the same text, of the asked dimensions", () => {
    const a = embedText("How do I reset my password?");
    expect(a).toEqual(embedText("How do I reset my password?"));
    expect(a).toHaveLength(DEFAULT_EMBEDDING_DIMENSIONS);
    expect(norm(a)).toBeCloseTo(1, 9);
    expect(embedText("How do I reset my password?", 64)).toHaveLength(64);
    expect(norm(embedText(""))).toBeCloseTo(1, 9);
  });

  it("ignores case, punctuation and inflection; splits CJK text into characters", () => {
    expect(words("Asking, ASKED; asks!")).toEqual(["ask", "ask", "ask"]);
    expect(stem("policies")).toBe("policy");
    expect(stem("class")).toBe("class");
    expect(words("東京の天気")).toEqual(["東", "京", "の", "天", "気"]);
    expect(cosine(embedText("Reset PASSWORD."), embedText("reset password"))).toBeCloseTo(1, 9);
  });

  it("scores a reworded question high, a different question on the same pattern low, unrelated text near zero", () => {
    const q = embedText("How do I reset my password?");
    const reworded = cosine(q, embedText("How can I reset my password?"));
    const sameTopic = cosine(q, embedText("What's the way to reset my password"));
    const otherObject = cosine(embedText("How do I cancel my subscription?"), embedText("How do I cancel my order?"));
    const samePattern = cosine(embedText("What is the capital of France?"), embedText("What is the boiling point of water?"));
    const unrelated = cosine(embedText("The quick brown fox jumps over the lazy dog"), embedText("Quarterly revenue grew by ten percent"));
    expect(reworded).toBeGreaterThan(0.97);
    expect(sameTopic).toBeGreaterThan(otherObject);
    expect(otherObject).toBeGreaterThan(samePattern);
    expect(Math.abs(samePattern)).toBeLessThan(0.2);
    expect(Math.abs(unrelated)).toBeLessThan(0.2);
  });
});

describe("the simulator's embedding APIs", () => {
  it("serves the official openai SDK: float, base64, token arrays and dimensions", async () => {
    const client = new OpenAI({ apiKey: "unused", baseURL: sim.openAiBaseUrl, maxRetries: 0 });
    const texts = ["How do I reset my password?", "How can I reset my password?"];
    const floats = await client.embeddings.create({ model: "sim-embed", input: texts, encoding_format: "float" });
    expect(floats.data.map((d) => d.index)).toEqual([0, 1]);
    expect(floats.data[0]!.embedding).toEqual(embedText(texts[0]!));
    expect(floats.usage).toEqual({ prompt_tokens: 12, total_tokens: 12 });

    // Without encoding_format the SDK asks for base64 and decodes it itself.
    const decoded = await client.embeddings.create({ model: "sim-embed", input: texts[1]! });
    const expected = embedText(texts[1]!);
    decoded.data[0]!.embedding.forEach((x, i) => expect(x).toBeCloseTo(expected[i]!, 6));

    const raw = await client.embeddings.create({ model: "sim-embed", input: [texts[0]!], encoding_format: "base64" });
    const bytes = Buffer.from(raw.data[0]!.embedding as unknown as string, "base64");
    expect(bytes.length).toBe(4 * DEFAULT_EMBEDDING_DIMENSIONS);
    expect(bytes.readFloatLE(0)).toBeCloseTo(embedText(texts[0]!)[0]!, 6);

    const tokens = await client.embeddings.create({ model: "sim-embed?dims=32", input: [[1, 2, 3], [4]], encoding_format: "float" });
    expect(tokens.data.map((d) => d.embedding.length)).toEqual([32, 32]);
    expect(tokens.usage.prompt_tokens).toBe(4);
    const sized = await client.embeddings.create({ model: "sim-embed?dims=32", input: "hi", dimensions: 8, encoding_format: "float" });
    expect(sized.data[0]!.embedding).toHaveLength(8);
  });

  it("serves Gemini embedContent and batchEmbedContents, honouring outputDimensionality", async () => {
    const model = encodeURIComponent("sim-embed");
    const one = await post(`/v1beta/models/${model}:embedContent`, { content: { parts: [{ text: "reset my password" }] }, outputDimensionality: 16 });
    expect(one.status).toBe(200);
    expect((one.body.embedding as { values: number[] }).values).toEqual(embedText("reset my password", 16));
    const batch = await post(`/v1beta/models/${model}:batchEmbedContents`, {
      requests: ["one", "two"].map((text) => ({ model: "models/sim-embed", content: { parts: [{ text }] } })),
    });
    expect(batch.status).toBe(200);
    expect((batch.body.embeddings as Array<{ values: number[] }>).map((e) => e.values)).toEqual([embedText("one"), embedText("two")]);
  });

  it("fails as asked, and refuses bad input with 400 in each API's error shape", async () => {
    const failed = await post("/v1/embeddings", { model: "sim-embed?fail=status&status=503", input: "x" });
    expect(failed.status).toBe(503);
    expect((failed.body.error as { type: string }).type).toBe("server_error");
    const script = `emb-${Date.now()}`;
    const first = await post("/v1/embeddings", { model: `sim-embed?fail=status&fail_first=1&script=${script}`, input: "x" });
    const second = await post("/v1/embeddings", { model: `sim-embed?fail=status&fail_first=1&script=${script}`, input: "x" });
    expect([first.status, second.status]).toEqual([500, 200]);

    for (const body of [
      { model: "sim-embed", input: [] },
      { model: "sim-embed", input: [""] },
      { model: "sim-embed", input: "x", encoding_format: "hex" },
      { model: "sim-embed", input: "x", dimensions: 0 },
    ]) {
      const res = await post("/v1/embeddings", body);
      expect(res.status).toBe(400);
      expect((res.body.error as { type: string }).type).toBe("invalid_request_error");
    }
    const gemini = await post(`/v1beta/models/sim-embed:embedContent`, { content: { parts: [{ inlineData: {} }] } });
    expect(gemini.status).toBe(400);
    expect((gemini.body.error as { status: string }).status).toBe("INVALID_ARGUMENT");
  });

  it("records each embedding request", async () => {
    const tag = `emb-rec-${Date.now()}`;
    await post("/v1/embeddings", { model: `sim-embed?tag=${tag}`, input: ["a", "b", "c"] });
    const record = await sim.records.waitFor((r) => r.tag === tag && r.outcome === "completed", 30_000);
    expect(record.format).toBe("openai-embeddings");
    expect(record.tokensWritten).toBe(3);
  });
});
