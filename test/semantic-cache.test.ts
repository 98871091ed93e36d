import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CacheHit } from "../gen/sluice/v1/delta_pb.js";
import { cosine, embedText } from "../src/simulator/embedding-vectors.js";
import { simulatedText } from "../src/simulator/text.js";
import { chatClient, collect, textOf, transports, userRequest } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { scrape } from "./helpers/prometheus.js";

/** The embedded PGlite: one per file, it takes seconds to start (TOOLCHAIN: 5–16 s on this machine). */
const DB_START_MS = 90_000;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: {
        emb: { provider: "sim", model: "sim-embed" },
        faq: { provider: "sim", model: "sim-1?tokens=6&seed=5", cache: { semantic: { embeddingModel: "emb", threshold: 0.9 } } },
        both: { provider: "sim", model: "sim-1?tokens=4&seed=6", cache: { exact: { ttlS: 60 }, semantic: { embeddingModel: "emb", threshold: 0.9, maxEntries: 2 } } },
        "emb-down": { provider: "sim", model: "sim-embed?fail=status&status=503" },
        fragile: { provider: "sim", model: "sim-1?tokens=3&seed=7", cache: { exact: { ttlS: 60 }, semantic: { embeddingModel: "emb-down" } } },
      },
    }),
    store: { postgres: {} },
    // Far beyond a healthy lookup on a loaded machine: a slow query must not turn an expected hit into a miss.
    cache: { lookupTimeoutMs: 5_000 },
  });
  await h.waitForLog((l) => l.event === "db.ready", DB_START_MS);
}, DB_START_MS + 20_000);
afterAll(() => h.close());

const sdk = () => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "unused", maxRetries: 0 });
const chatCalls = () => h.sim.records.all().filter((r) => r.format === "openai").length;

async function ask(model: string, question: string, system?: string) {
  const messages = [...(system ? [{ role: "system" as const, content: system }] : []), { role: "user" as const, content: question }];
  const { data, response } = await sdk().chat.completions.create({ model, messages }).withResponse();
  return { text: data.choices[0]!.message.content, cache: response.headers.get("sluice-cache"), similarity: response.headers.get("sluice-cache-similarity"), requestId: response.headers.get("x-request-id")! };
}
const stored = (requestId: string) => h.waitForLog((l) => l.event === "cache.stored" && l.layer === "semantic" && l.requestId === requestId);

describe("the semantic cache on the embedded PGlite (pgvector)", () => {
  it("answers a reworded question from an earlier answer, with its similarity, without calling the model", async () => {
    const first = await ask("faq", "How do I reset my password?");
    expect(first).toMatchObject({ cache: "miss", text: simulatedText(5, 6) });
    await stored(first.requestId);
    const before = chatCalls();
    const reworded = await ask("faq", "How can I reset my password?");
    expect(reworded).toMatchObject({ cache: "hit-semantic", text: simulatedText(5, 6) });
    const expected = cosine(embedText("How do I reset my password?"), embedText("How can I reset my password?"));
    expect(Number(reworded.similarity)).toBeCloseTo(expected, 3);
    expect(chatCalls()).toBe(before);

    let headers: Headers | undefined;
    const messages = await collect(chatClient(transports(h.url)["grpc (connect-node, h2)"]!).streamChat(userRequest("faq", "how can i reset my password"), { onHeader: (x) => (headers = x) }));
    expect(headers?.get("sluice-cache")).toBe("hit-semantic");
    expect(messages[0]!.delta).toMatchObject({ case: "start", value: { cache: CacheHit.SEMANTIC, cacheRequestId: first.requestId } });
    expect((messages[0]!.delta.value as { cacheSimilarity: number }).cacheSimilarity).toBeGreaterThan(0.9);
    expect(textOf(messages)).toBe(simulatedText(5, 6));
  });

  it("never answers under another system prompt, nor an unrelated question", async () => {
    const first = await ask("faq", "What are your opening hours?", "You are a bank.");
    await stored(first.requestId);
    expect((await ask("faq", "What are your opening hours?", "You are a bakery.")).cache).toBe("miss");
    expect((await ask("faq", "Where is the nearest branch?", "You are a bank.")).cache).toBe("miss");
    expect((await ask("faq", "what are your opening hours", "You are a bank.")).cache).toBe("hit-semantic");
  });

  it("checks the exact cache first, and keeps at most maxEntries per scope", async () => {
    const first = await ask("both", "Is the exact cache first?");
    await stored(first.requestId);
    expect((await ask("both", "Is the exact cache first?")).cache).toBe("hit-exact");
    for (const q of ["Second question about rates?", "Third question about loans?"]) await stored((await ask("both", q)).requestId);
    // Two entries kept: the first question's entry was trimmed, and only its exact entry answers it now.
    expect((await ask("both", "is the exact cache first")).cache).toBe("miss");
    const metrics = await scrape(`${h.url}/metrics`);
    const results = metrics.families.find((f) => f.name === "sluice_cache_lookups_total")!.metrics.filter((m) => m.labels?.gen_ai_request_model === "both");
    expect(results.map((m) => m.labels!.sluice_cache_result).sort()).toEqual(["hit_exact", "miss"]);
  });

  it("an embedding provider that fails leaves the exact cache: the request is served, counted as a lookup error", async () => {
    const first = await ask("fragile", "Does a failing embedder fail me?");
    expect(first).toMatchObject({ cache: "miss", text: simulatedText(7, 3) });
    await h.waitForLog((l) => l.event === "cache.stored" && l.layer === "exact" && l.requestId === first.requestId);
    expect((await ask("fragile", "Does a failing embedder fail me?")).cache).toBe("hit-exact");
    expect(h.logs().some((l) => l.event === "cache.embed_failed" && l.alias === "fragile")).toBe(true);
    const metrics = await scrape(`${h.url}/metrics`);
    const errors = metrics.families.find((f) => f.name === "sluice_cache_lookups_total")!.metrics.filter((m) => m.labels?.gen_ai_request_model === "fragile" && m.labels?.sluice_cache_result === "error");
    expect(Number(errors[0]!.value)).toBe(1);
  });
});
