import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { type ModelRoute, type RouteTarget, resolveConfig } from "../../src/config/config.js";
import type { ChatRequest } from "../../src/core/chat-request.js";
import type { Database } from "../../src/db/database.js";
import { answerStats, compareCandidate, percentile, type Recorded, validJson } from "../../src/evaluation/evaluation-report.js";
import { createLogger } from "../../src/logging/logger.js";
import { type AnswerSummary, createAnswerCapture } from "../../src/recording/answer-summary.js";
import { createRecorder, withoutSecrets } from "../../src/recording/recorder.js";
import { configErrors } from "../helpers/config-errors.js";

const request = (text: string, extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: "prod",
  messages: [{ role: "user", content: [{ type: "text", text }] }],
  tools: [],
  sampling: { stop: [] },
  metadata: { labels: {} },
  ...extra,
});

const answer = (text: string, extra: Partial<AnswerSummary> = {}): AnswerSummary => ({
  text,
  toolCalls: [],
  finishReason: "stop",
  usage: { inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, reasoningTokens: 0 },
  costMicros: 70,
  ttftMs: 10,
  durationMs: 20,
  target: "oa/m",
  ...extra,
});

describe("the evaluation report", () => {
  it("percentiles are nearest-rank, and stats sum tokens and cost over answered requests only", () => {
    expect(percentile([1, 2, 3, 4], 50)).toBe(2);
    expect(percentile([1, 2, 3, 4], 95)).toBe(4);
    expect(percentile([], 50)).toBe(0);
    const stats = answerStats(4, [answer("a", { ttftMs: 5, durationMs: 9 }), answer("b", { finishReason: "length" }), answer("c")], 1);
    expect(stats).toMatchObject({ requests: 4, answered: 3, errors: 1, errorRate: 0.25, inputTokens: 30, outputTokens: 15, costMicros: 210, finishReasons: { stop: 2, length: 1 } });
    expect(stats.ttftMs).toEqual({ p50: 10, p95: 10 });
  });

  it("compares text, tool calls (arguments by JSON value, whatever key order) and structured outputs against the recording", () => {
    const schema = { type: "object", properties: { a: { type: "string" } }, required: ["a"] };
    const recorded: Recorded[] = [
      { id: "r1", request: request("q1"), answer: answer("Hello.") },
      { id: "r2", request: request("q2"), answer: answer("", { toolCalls: [{ name: "get", arguments: '{"city":"Oslo","unit":"c"}' }], finishReason: "tool_calls" }) },
      { id: "r3", request: request("q3", { responseFormat: { type: "json_schema", name: "x", schema } }), answer: answer('{"a":"1"}') },
      { id: "r4", request: request("q4"), answer: answer("Bye.") },
    ];
    const replayed = new Map([
      ["r1", { ok: true as const, answer: answer("  Hello. ") }],
      ["r2", { ok: true as const, answer: answer("", { toolCalls: [{ name: "get", arguments: '{ "unit": "c", "city": "Oslo" }' }] }) }],
      ["r3", { ok: true as const, answer: answer('{"b":"1"}') }],
      ["r4", { ok: false as const, code: "overloaded" }],
    ]);
    const c = compareCandidate(recorded, replayed);
    expect(c.stats).toMatchObject({ requests: 4, answered: 3, errors: 1 });
    expect(c.exactMatchRate).toBeCloseTo(2 / 3);
    expect(c).toMatchObject({ toolCallAgreement: 1, toolCallCases: 1, jsonValidRate: 0, jsonCases: 1 });
    // Another tool, or the same with other arguments, disagrees.
    const other = compareCandidate(recorded.slice(1, 2), new Map([["r2", { ok: true as const, answer: answer("", { toolCalls: [{ name: "get", arguments: '{"city":"Bergen","unit":"c"}' }] }) }]]));
    expect(other.toolCallAgreement).toBe(0);
    // Neither tools nor JSON asked for: those rates are absent, not 0.
    expect(compareCandidate(recorded.slice(0, 1), replayed)).not.toHaveProperty("toolCallAgreement");
  });

  it("JSON validity: parses, and with a schema holds the required top-level properties", () => {
    const withSchema = request("q", { responseFormat: { type: "json_schema", name: "x", schema: { type: "object", required: ["a", "b"] } } });
    expect(validJson(withSchema, '{"a":1,"b":2}')).toBe(true);
    expect(validJson(withSchema, '{"a":1}')).toBe(false);
    expect(validJson(withSchema, "[1]")).toBe(false);
    expect(validJson(withSchema, "Sure! Here it is")).toBe(false);
    expect(validJson(request("q", { responseFormat: { type: "json_object" } }), "[1, 2]")).toBe(true);
  });
});

describe("the recorder", () => {
  const route = (record?: { sampleRate: number; maxPerDay: number }) => ({ alias: "prod", ...(record ? { record } : {}) }) as unknown as ModelRoute;
  const target = { key: "oa/m", price: { inputPerMTok: 1, outputPerMTok: 2 } } as unknown as RouteTarget;
  const call = { requestId: "req-1", keptLocal: false };

  /** A database that keeps the rows a recorder inserts. */
  function memoryDatabase() {
    const rows: Array<{ id: string; request: string; answer: string }> = [];
    const db = {
      kind: "embedded",
      query: async (_sql: string, params?: readonly unknown[]) => {
        const [ids, , , , , requests, answers] = params as string[][];
        ids!.forEach((id, i) => rows.push({ id, request: requests![i]!, answer: answers![i]! }));
        return { rows: ids!.map((id) => ({ id })) };
      },
    } as unknown as Database;
    return { rows, database: () => Promise.resolve(db) };
  }
  const logger = createLogger("error", new PassThrough());

  it("keeps nothing for an alias that does not record, a background call, or a call whose personal data went out as written", () => {
    const recorder = createRecorder({ ...memoryDatabase(), logger });
    expect(recorder.plan(route(), call, request("q"))).toBeUndefined();
    const on = route({ sampleRate: 1, maxPerDay: 10 });
    expect(recorder.plan(on, { ...call, background: true }, request("q"))).toBeUndefined();
    expect(recorder.plan(on, { ...call, keptLocal: true }, request("q"))).toBeUndefined();
    expect(recorder.plan(on, call, request("q"))).toBeDefined();
  });

  it("draws by sampleRate and stops at maxPerDay, counting again the next UTC day", async () => {
    let draw = 0.5;
    let now = Date.UTC(2026, 11, 3, 12);
    const store = memoryDatabase();
    const recorder = createRecorder({ ...store, logger, random: () => draw, now: () => now });
    expect(recorder.plan(route({ sampleRate: 0.4, maxPerDay: 10 }), call, request("q"))).toBeUndefined();
    draw = 0.3;
    const on = route({ sampleRate: 0.4, maxPerDay: 2 });
    for (let i = 0; i < 2; i++) recorder.offer(recorder.plan(on, { ...call, requestId: `r${i}` }, request("q"))!, target);
    expect(recorder.plan(on, call, request("q"))).toBeUndefined();
    now += 86_400_000;
    expect(recorder.plan(on, call, request("q"))).toBeDefined();
    await recorder.flush();
    expect(store.rows.map((r) => r.id)).toEqual(["r0", "r1"]);
  });

  it("writes the folded answer and never a secret, in the request or the answer", async () => {
    const store = memoryDatabase();
    const recorder = createRecorder({ ...store, logger });
    const secret = "ghp_Zq8vR2kLm4Tn7Wx1Yb3Cd5Fg";
    const plan = recorder.plan(route({ sampleRate: 1, maxPerDay: 10 }), call, request(`token ${secret}`))!;
    plan.capture.observe({ type: "start", responseId: "r", provider: "oa", model: "m" });
    plan.capture.observe({ type: "text", text: `echo ${secret}` });
    plan.capture.observe({ type: "usage", inputTokens: 1_000_000, outputTokens: 1_000_000, cachedInputTokens: 0, reasoningTokens: 0 });
    plan.capture.observe({ type: "finish", reason: "stop" });
    recorder.offer(plan, target);
    await recorder.flush();
    const [row] = store.rows;
    expect(row!.request + row!.answer).not.toContain(secret);
    expect(JSON.parse(row!.answer)).toMatchObject({ finishReason: "stop", costMicros: 3_000_000, target: "oa/m", text: expect.stringMatching(/^echo <SECRET_\d+>$/) });
    const clean = withoutSecrets(request(`a ${secret}`), answer(`b ${secret}`));
    expect(JSON.stringify(clean)).not.toContain(secret);
  });

  it("times the first text or tool delta and the end on the clock it is given", () => {
    let now = 100;
    const capture = createAnswerCapture(100, () => now);
    now = 130;
    capture.observe({ type: "tool_call", index: 0, id: "c", name: "get", arguments: '{"a"' });
    capture.observe({ type: "tool_call", index: 0, arguments: ":1}" });
    now = 180;
    expect(capture.summary(undefined)).toMatchObject({ ttftMs: 30, durationMs: 80, toolCalls: [{ name: "get", arguments: '{"a":1}' }] });
  });
});

describe("shadow settings", () => {
  const base = (shadow: object, keys: object[] = []) => ({
    providers: { p: { kind: "openai", baseUrl: "http://127.0.0.1:1" } },
    models: { live: { provider: "p", model: "m", shadow }, candidate: { provider: "p", model: "n" } },
    ...(keys.length > 0 ? { auth: { keys } } : {}),
  });
  const KEY = { name: "shadow-key", sha256: "b".repeat(64) };

  it("refuses an unknown candidate, the alias itself, an unknown key, and no key when keys are configured", () => {
    expect(configErrors(base({ alias: "nope" }))).toContain('models.live.shadow.alias: unknown alias "nope"');
    expect(configErrors(base({ alias: "live" }))).toContain("models.live.shadow.alias: cannot be the alias itself");
    expect(configErrors(base({ alias: "candidate", key: "ghost" }, [KEY]))).toContain('models.live.shadow.key: unknown key "ghost"');
    expect(configErrors(base({ alias: "candidate" }, [KEY]))).toContain("models.live.shadow.key: is required when keys are configured");
  });

  it("takes a valid one, with its defaults", () => {
    const config = resolveConfig(base({ alias: "candidate", key: "shadow-key" }, [KEY]), {}, "test.yaml");
    expect(config.models.get("live")!.shadow).toEqual({ alias: "candidate", key: "shadow-key", sampleRate: 0.01, maxInFlight: 4 });
  });
});
