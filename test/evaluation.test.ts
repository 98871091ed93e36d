import OpenAI from "openai";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminClient } from "./helpers/admin.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";

/**
 * The done-when of issue #30's evaluation replay, on a real PostgreSQL:
 * 200 calls of alias `prod` are recorded (plain questions, structured
 * outputs, tool calls); a dataset of them is replayed against two
 * candidates (`same`, the same model and price, and `cheap`, shorter
 * answers at a lower price) as batches charged to a key of its own; the
 * report compares each with the recording, over gRPC and as CSV.
 */
const ADMIN = "sk-test-eval-admin-7c1e9a3f5b2d4068";
const CALLER = "sk-test-eval-caller-2b8d4f6a0c1e3579";
const EVALUATOR = "sk-test-eval-runner-5e9a1c3f7b0d2468";
/** An API key pasted into a prompt: a recording must never keep it. */
const PASTED_SECRET = "sk-proj-Zq8vR2kLm4Tn7Wx1Yb3Cd5Fg";
const PRICE = { inputPerMTok: 2, outputPerMTok: 10 };

let database: OwnDatabase;
let h: Harness;

beforeAll(async () => {
  database = await ownDatabase();
  h = await startHarness({
    routing: (sim) => ({
      providers: { oa: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: {
        prod: { provider: "oa", model: "sim-1?tokens=6", price: PRICE, record: { sampleRate: 1, maxPerDay: 10_000 } },
        same: { provider: "oa", model: "sim-1?tokens=6", price: PRICE },
        cheap: { provider: "oa", model: "sim-1?tokens=3", price: { inputPerMTok: 1, outputPerMTok: 4 } },
        embed: { provider: "oa", model: "sim-embed" },
        shadowed: { provider: "oa", model: "sim-1?tokens=6", price: PRICE, shadow: { alias: "cheap", sampleRate: 1, key: "evaluator", maxInFlight: 100 } },
      },
    }),
    env: { ADMIN, CALLER, EVALUATOR },
    auth: {
      adminKeyEnv: "ADMIN",
      tagKeys: ["batch_id"],
      keys: [
        { name: "caller", keyEnv: "CALLER" },
        { name: "evaluator", keyEnv: "EVALUATOR" },
      ],
    },
    store: { postgres: { url: database.url, poolSize: 4 } },
    batch: { concurrency: 4 },
  });
});

afterAll(async () => {
  await h?.close();
  await database?.drop();
});

const SCHEMA = { type: "object", properties: { answer: { type: "string" }, confidence: { type: "number" } }, required: ["answer", "confidence"], additionalProperties: false };
const WEATHER = { type: "function" as const, function: { name: "get_weather", description: "Weather in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } };

/** Call `i` of the 200: 160 plain questions, 20 structured outputs, 20 that call a tool. */
function callFor(i: number): OpenAI.ChatCompletionCreateParamsNonStreaming {
  const base = { model: "prod", max_tokens: 32 };
  if (i < 160) return { ...base, messages: [{ role: "user", content: i === 0 ? `My key is ${PASTED_SECRET}, question ${i}` : `question ${i}` }] };
  if (i < 180) return { ...base, messages: [{ role: "user", content: `structured ${i}` }], response_format: { type: "json_schema", json_schema: { name: "reply", schema: SCHEMA, strict: true } } };
  return { ...base, messages: [{ role: "user", content: `#sim tools=1\nweather ${i}` }], tools: [WEATHER] };
}

describe("evaluation replay", () => {
  it("records 200 calls, replays them against two candidates as batches, and reports the comparison", async () => {
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: CALLER, maxRetries: 0 });
    for (let at = 0; at < 200; at += 20) await Promise.all(Array.from({ length: 20 }, (_, i) => sdk.chat.completions.create(callFor(at + i))));
    await h.sluice.recorder.flush();

    const admin = adminClient(h.url, ADMIN);
    const dataset = await admin.createDataset({ name: "prod-regression", alias: "prod", description: "200 calls of prod" });
    expect(dataset).toMatchObject({ name: "prod-regression", size: 200 });
    await expect(admin.createDataset({ name: "prod-regression", alias: "prod" })).rejects.toMatchObject({ rawMessage: expect.stringContaining("exists") });
    await expect(admin.createDataset({ name: "empty", alias: "cheap" })).rejects.toMatchObject({ rawMessage: expect.stringContaining("no recording") });
    // With keys configured, an evaluation names the key it is charged to.
    await expect(admin.startEvaluation({ dataset: "prod-regression", candidates: ["same"] })).rejects.toMatchObject({ rawMessage: expect.stringContaining("key") });

    const started = await admin.startEvaluation({ dataset: "prod-regression", candidates: ["same", "cheap"], key: "evaluator" });
    expect(started.size).toBe(200);
    expect(Object.keys(started.batches).sort()).toEqual(["cheap", "same"]);
    await Promise.all(Object.values(started.batches).map((id) => h.sluice.batches.settled(id)));

    const report = await admin.getEvaluationReport({ evaluationId: started.evaluationId });
    expect(report).toMatchObject({ evaluationId: started.evaluationId, dataset: "prod-regression", finished: true });
    const recorded = report.recorded!;
    expect(recorded).toMatchObject({ requests: 200, answered: 200, errors: 0 });
    expect(recorded.finishReasons).toMatchObject({ tool_calls: 20 });
    const [same, cheap] = ["same", "cheap"].map((alias) => report.candidates.find((c) => c.alias === alias)!);
    expect(report.candidates.map((c) => c.alias)).toEqual(["same", "cheap"]);

    // The same model and price: every answer and every cost as recorded.
    expect(same).toMatchObject({ batchStatus: "completed", exactMatchRate: 1, toolCallAgreement: 1, toolCallCases: 20, jsonValidRate: 1, jsonCases: 20 });
    expect(same!.stats).toMatchObject({ requests: 200, answered: 200, errors: 0, errorRate: 0, outputTokens: recorded.outputTokens, costUsdMicros: recorded.costUsdMicros });
    expect(same!.stats!.durationP50Ms).toBeGreaterThan(0);

    // Half the text at a lower price: no text answer matches, fewer tokens, less spent; structured outputs stay valid.
    expect(cheap!.stats).toMatchObject({ requests: 200, answered: 200, errors: 0 });
    expect(cheap!.exactMatchRate).toBeLessThan(0.2);
    expect(cheap!.stats!.outputTokens).toBeLessThan(recorded.outputTokens);
    expect(cheap!.stats!.costUsdMicros).toBeLessThan(recorded.costUsdMicros);
    expect(cheap!.jsonValidRate).toBe(1);

    // With an embedding alias: identical answers are similar by 1, shorter ones by less.
    const similar = await admin.getEvaluationReport({ evaluationId: started.evaluationId, embeddingModel: "embed" });
    const [sameSim, cheapSim] = ["same", "cheap"].map((alias) => similar.candidates.find((c) => c.alias === alias)!);
    expect(sameSim!.semanticCases).toBe(200);
    expect(sameSim!.semanticSimilarity).toBeCloseTo(1, 5);
    expect(cheapSim!.semanticSimilarity).toBeGreaterThan(0);
    expect(cheapSim!.semanticSimilarity).toBeLessThan(0.999);
    expect(report.candidates[0]).not.toHaveProperty("semanticSimilarity", expect.anything());

    // The same report for spreadsheets.
    const csv = await fetch(`${h.url}/admin/v1/evaluations/${started.evaluationId}/report.csv?embedding_model=embed`, { headers: { authorization: `Bearer ${ADMIN}` } });
    expect(csv.status).toBe(200);
    const rows = (await csv.text()).trim().split("\r\n");
    expect(rows).toHaveLength(4);
    expect(rows[0]).toMatch(/^side,batch_id,batch_status,requests,answered,errors,error_rate,/);
    expect(rows.slice(1).map((r) => r.split(",")[0])).toEqual(["recorded", "same", "cheap"]);
    expect(rows[2]!.split(",").at(-2)).toBe("1.0000");
    expect((await fetch(`${h.url}/admin/v1/evaluations/${started.evaluationId}/report.csv`)).status).toBe(401);

    // Recordings keep no secret; replays are charged to the evaluator key, tagged with their batch.
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const kept = (await client.query<{ request: string; key_name: string }>("SELECT request, key_name FROM sluice_recordings")).rows;
      expect(kept).toHaveLength(200);
      expect(kept.every((r) => r.key_name === "caller")).toBe(true);
      expect(kept.some((r) => r.request.includes("question 0"))).toBe(true);
      expect(kept.some((r) => r.request.includes(PASTED_SECRET))).toBe(false);
    } finally {
      await client.end();
    }
  }, 180_000);
});

describe("shadow traffic", () => {
  it("mirrors completed calls to the candidate after the caller's answer, charged to the shadow key, and compares them", async () => {
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: CALLER, maxRetries: 0 });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => sdk.chat.completions.create({ model: "shadowed", max_tokens: 32, messages: [{ role: "user", content: `shadowed ${i}` }] })));
    // The caller got the live alias's answer, whole.
    for (const answer of answers) expect(answer.choices[0]!.finish_reason).toBe("stop");
    await h.sluice.shadow.idle();

    const report = await adminClient(h.url, ADMIN).getShadowReport({ alias: "shadowed" });
    expect(report.live).toMatchObject({ requests: 20, answered: 20 });
    expect(report.candidates.map((c) => c.alias)).toEqual(["cheap"]);
    const cheap = report.candidates[0]!;
    expect(cheap.stats).toMatchObject({ requests: 20, answered: 20, errors: 0 });
    expect(cheap.exactMatchRate).toBeLessThan(1);
    expect(cheap.stats!.costUsdMicros).toBeLessThan(report.live!.costUsdMicros);
    // The shadow pairs keep the live request without anything of the caller's key.
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const rows = (await client.query<{ candidate: string; request: string }>("SELECT candidate, request FROM sluice_shadow WHERE alias = 'shadowed'")).rows;
      expect(rows).toHaveLength(20);
      expect(rows.every((r) => r.candidate === "cheap" && !r.request.includes(CALLER))).toBe(true);
    } finally {
      await client.end();
    }
  });
});
