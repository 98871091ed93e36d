import { Code } from "@connectrpc/connect";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema, QuotaFailureSchema } from "../gen/google/rpc/error_details_pb.js";
import { KeySource } from "../gen/sluice/admin/v1/admin_service_pb.js";
import { sha256Hex } from "../src/config/key-hash.js";
import { subjectOf } from "../src/store/tenant-store.js";
import { keyId } from "../src/tenancy/principal.js";
import { adminClient } from "./helpers/admin.js";
import { chatClient, collect, rpcFailure, transports, userRequest } from "./helpers/clients.js";
import { baseUrlFor, type Harness, startHarness } from "./helpers/harness.js";
import { dropPrefix, SHARED_REDIS_URL, testPrefix, usageRecords } from "./helpers/redis.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

/**
 * Teams and business lines over the wire: managed through AdminService,
 * counted in the same admission as the key, refused with 402 (facade) and
 * RESOURCE_EXHAUSTED / BUDGET_EXCEEDED (gRPC) naming the level that
 * refused, never its figures.
 */

const ADMIN_KEY = "sk-test-admin-teams-5c7e9a1b3d2f4068";
const KEYS = {
  alpha: "sk-test-alpha-1b3d5f7a9c2e4068",
  beta: "sk-test-beta-8e0a2c4b6d1f3957",
  gamma: "sk-test-gamma-3f5b7d9c1e2a4068",
  outsider: "sk-test-outsider-6a8c0e2b4d1f3957",
  delta: "sk-test-delta-2c4e6a8b0d1f3957",
  epsilon: "sk-test-epsilon-7b9d1f3a5c2e4068",
};
const PRICE = { inputPerMTok: 1_000, outputPerMTok: 2_000 };
const prefix = testPrefix("teams");
const events = tenancyEvents();
const clockMs = Date.UTC(2026, 4, 20, 12);
let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: baseUrlFor(sim, "openai"), breaker: { failures: 10_000 } } },
      models: { sim: { provider: "simulator", model: "sim-1?tokens=3", price: PRICE } },
    }),
    env: { ADMIN_KEY, ALPHA: KEYS.alpha, BETA: KEYS.beta, GAMMA: KEYS.gamma, OUTSIDER: KEYS.outsider, DELTA: KEYS.delta, EPSILON: KEYS.epsilon },
    auth: {
      adminKeyEnv: "ADMIN_KEY",
      keys: [
        { name: "alpha", keyEnv: "ALPHA", team: "search" },
        { name: "beta", keyEnv: "BETA", team: "search" },
        { name: "gamma", keyEnv: "GAMMA", team: "thrift" },
        { name: "outsider", keyEnv: "OUTSIDER" },
        { name: "delta", keyEnv: "DELTA", team: "books" },
        { name: "epsilon", keyEnv: "EPSILON", team: "books" },
      ],
      teams: [
        { name: "search", businessLine: "consumer", budget: { usd: 0.05, period: "month" } },
        { name: "thrift", businessLine: "retail" },
        { name: "books", budget: { usd: 0.05, period: "month" } },
      ],
      businessLines: [{ name: "consumer" }, { name: "retail", budget: { usd: 0.04, period: "month" } }],
      tagKeys: ["project", "env"],
    },
    store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000 } },
    storeClock: () => clockMs,
    observer: events.observer,
  });
});
afterAll(async () => {
  await h.close();
  await dropPrefix(prefix);
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const grpcClient = () => chatClient(transports(h.url)["grpc (connect-node, h2)"]!);
const admin = () => adminClient(h.url, ADMIN_KEY);
let ids = 0;

async function chatCompletion(key: string) {
  const id = `teams-${++ids}-${Date.now()}`;
  const res = await fetch(`${h.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...bearer(key), "x-request-id": id },
    body: JSON.stringify({ model: "sim", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: a JSON body the assertions read by path
  return { res, id, json: (await res.json()) as Record<string, any> };
}

/** Alternates `keys` until one request is refused; the refusal and what the admitted ones cost. */
async function spendUntilRefused(keys: readonly string[]) {
  let spent = 0;
  const records = [];
  for (let i = 0; i < 40; i++) {
    const r = await chatCompletion(keys[i % keys.length]!);
    if (r.res.status !== 200) return { refusal: r, spent, records };
    const record = await events.recorded(r.id);
    records.push(record);
    spent += record.costMicros;
  }
  throw new Error("no refusal in 40 requests");
}

describe("a team's budget", () => {
  it("is shared by its keys: spent by two of them together, then 402 naming the team, and no figures of theirs", async () => {
    const { refusal, spent, records } = await spendUntilRefused([KEYS.alpha, KEYS.beta]);
    expect(new Set(records.map((r) => r.key))).toEqual(new Set(["alpha", "beta"]));
    for (const record of records) expect(record).toMatchObject({ team: "search", businessLine: "consumer" });
    expect(spent).toBeLessThanOrEqual(50_000);

    expect(refusal.res.status).toBe(402);
    expect(refusal.json.error).toMatchObject({ code: "budget_exceeded", type: "insufficient_quota", param: null });
    expect(refusal.res.headers.get("sluice-budget-level")).toBe("team");
    expect(refusal.res.headers.get("sluice-budget-reset")).toMatch(/^((\d+d)?(\d+h)?\d+m\d+s|[\d.]+m?s)$/);
    // Spent so far plus this request's reservation would pass the budget: too little is left, not all spent.
    expect(refusal.json.error.message).toMatch(/^team search has too little of its budget for this month left for this request; lower max_tokens \(it renews in/);
    expect(refusal.json.error.message).not.toMatch(/USD|\d+\.\d+/);

    // Both keys are refused; a key outside the team is not.
    expect((await chatCompletion(KEYS.alpha)).res.status).toBe(402);
    expect((await chatCompletion(KEYS.outsider)).res.status).toBe(200);

    // The official SDK does not retry a 402.
    let sent = 0;
    const counting: typeof fetch = (input, init) => {
      sent++;
      return fetch(input, init);
    };
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEYS.beta, maxRetries: 2, fetch: counting });
    const sdkError = await sdk.chat.completions.create({ model: "sim", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(sdkError).toMatchObject({ status: 402, code: "budget_exceeded" });
    expect(sent).toBe(1);

    const grpcRefused = await rpcFailure(collect(grpcClient().streamChat(userRequest("sim", "hi", { sampling: { maxTokens: 5 } }), { headers: bearer(KEYS.beta) })));
    expect(grpcRefused.code).toBe(Code.ResourceExhausted);
    expect(grpcRefused.findDetails(ErrorInfoSchema)[0]).toMatchObject({ reason: "BUDGET_EXCEEDED", metadata: { level: "team" } });
    expect(grpcRefused.findDetails(QuotaFailureSchema)[0]?.violations[0]).toMatchObject({ subject: "team" });
    expect(grpcRefused.metadata.get("sluice-budget-level")).toBe("team");

    // The team's rollup is what its keys spent; nothing is left reserved; the keys' own rollups split it.
    expect(await h.sluice.tenancy.store.usage(subjectOf({ level: "team", id: "search" }), "month")).toMatchObject({ requests: records.length, spendMicros: spent, reservedMicros: 0 });
    const alpha = await h.sluice.tenancy.store.usage(subjectOf({ level: "key", id: keyId(sha256Hex(KEYS.alpha)) }), "month");
    const beta = await h.sluice.tenancy.store.usage(subjectOf({ level: "key", id: keyId(sha256Hex(KEYS.beta)) }), "month");
    expect(alpha.spendMicros + beta.spendMicros).toBe(spent);
    // The usage stream carries the team and business line of each record.
    const stored = (await usageRecords(prefix)).filter((r) => r.requestId === records[0]!.requestId);
    expect(stored[0]).toMatchObject({ team: "search", businessLine: "consumer" });
  });
});

describe("a team's budget held by a member's stream in flight", () => {
  it("says the streams hold it, not that it is spent, and shows no figures", async () => {
    // Delta's stream reserves its prompt estimate and 12 output tokens (about 0.04 USD of the team's 0.05), then holds.
    const tag = `books-held-${Date.now()}`;
    const held = fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...bearer(KEYS.delta) },
      body: JSON.stringify({ model: "sim", max_tokens: 12, stream: true, messages: [{ role: "user", content: `#sim tokens=3 hold_at=1 tag=${tag}` }] }),
    });
    await h.sim.records.waitFor((r) => r.tag === tag && r.heldAt !== undefined, 30_000);
    try {
      const refusal = await chatCompletion(KEYS.epsilon);
      expect(refusal.res.status).toBe(402);
      expect(refusal.res.headers.get("sluice-budget-level")).toBe("team");
      expect(refusal.json.error.message).toMatch(/^team books has no room left in its budget for this month: streams in flight hold what this request would need/);
      expect(refusal.json.error.message).not.toMatch(/spent|USD|\d+\.\d+/);
    } finally {
      h.sim.records.release(tag);
    }
    expect((await held).status).toBe(200);
  });
});

describe("a business line's budget", () => {
  it("refuses every key of every team in the line once spent, naming the business line", async () => {
    const { refusal, spent } = await spendUntilRefused([KEYS.gamma]);
    expect(spent).toBeLessThanOrEqual(40_000);
    expect(refusal.res.status).toBe(402);
    expect(refusal.res.headers.get("sluice-budget-level")).toBe("business_line");
    expect(refusal.json.error.message).toMatch(/^business line retail has too little of its budget/);
    const grpcRefused = await rpcFailure(collect(grpcClient().streamChat(userRequest("sim", "hi", { sampling: { maxTokens: 5 } }), { headers: bearer(KEYS.gamma) })));
    expect(grpcRefused.findDetails(ErrorInfoSchema)[0]).toMatchObject({ reason: "BUDGET_EXCEEDED", metadata: { level: "business_line" } });
  });
});

describe("AdminService: teams and business lines", () => {
  it("creates, lists, changes and deletes them; a level with members cannot be deleted; configured ones change only in the configuration", async () => {
    const a = admin();
    await expect(a.createTeam({ name: "infra", businessLine: "ghost" })).rejects.toMatchObject({ code: Code.InvalidArgument, rawMessage: expect.stringContaining("no business line is named") });
    await expect(a.createTeam({ name: "search" })).rejects.toMatchObject({ code: Code.AlreadyExists });

    const line = await a.createBusinessLine({ name: "ops", budget: { usdMicros: 5_000_000n } });
    expect(line.businessLine).toMatchObject({ name: "ops", source: KeySource.RUNTIME, budget: { usdMicros: 5_000_000n } });
    const team = await a.createTeam({ name: "infra", businessLine: "ops", limits: { requestsPerMinute: 2 } });
    expect(team.team).toMatchObject({ name: "infra", businessLine: "ops", limits: { requestsPerMinute: 2 } });
    expect((await a.listTeams({})).teams.map((t) => [t.name, t.source])).toEqual([
      ["search", KeySource.CONFIG],
      ["thrift", KeySource.CONFIG],
      ["books", KeySource.CONFIG],
      ["infra", KeySource.RUNTIME],
    ]);

    // A runtime key in the runtime team: the team's 2 requests per minute hold.
    const created = await a.createKey({ name: "infra-bot", team: "infra" });
    expect(created.info?.team).toBe("infra");
    expect((await chatCompletion(created.key)).res.status).toBe(200);
    expect((await chatCompletion(created.key)).res.status).toBe(200);
    const limited = await chatCompletion(created.key);
    expect(limited.res.status).toBe(429);
    expect(limited.json.error.message).toBe("team infra is over its limit of 2 requests per minute");

    await expect(a.deleteTeam({ name: "infra" })).rejects.toMatchObject({ code: Code.FailedPrecondition, rawMessage: expect.stringContaining("key infra-bot") });
    await expect(a.deleteBusinessLine({ name: "ops" })).rejects.toMatchObject({ code: Code.FailedPrecondition, rawMessage: expect.stringContaining("team infra") });
    await expect(a.updateTeam({ name: "search", updateMask: { paths: ["limits"] } })).rejects.toMatchObject({ code: Code.InvalidArgument, rawMessage: expect.stringContaining("defined in the configuration") });
    await expect(a.updateKey({ name: "infra-bot", updateMask: { paths: ["colour"] } })).rejects.toMatchObject({ code: Code.InvalidArgument, rawMessage: expect.stringContaining("update_mask") });
    await expect(a.updateKey({ name: "infra-bot", team: "ghost" })).rejects.toMatchObject({ code: Code.InvalidArgument });

    // Raising the team's limit applies from the next admission.
    const raised = await a.updateTeam({ name: "infra", updateMask: { paths: ["limits"] }, limits: { requestsPerMinute: 10 } });
    expect(raised.team?.limits?.requestsPerMinute).toBe(10);
    expect(raised.team?.businessLine).toBe("ops");
    expect((await chatCompletion(created.key)).res.status).toBe(200);

    // Out of the team (a masked field left empty clears it), the key keeps working alone; then the team and line can go.
    const moved = await a.updateKey({ name: "infra-bot", updateMask: { paths: ["team"] } });
    expect(moved.key?.team).toBe("");
    const alone = await chatCompletion(created.key);
    expect(alone.res.status).toBe(200);
    expect((await events.recorded(alone.id)).team).toBeUndefined();
    expect((await a.deleteTeam({ name: "infra" })).team?.name).toBe("infra");
    expect((await a.deleteBusinessLine({ name: "ops" })).businessLine?.name).toBe("ops");
    expect((await a.listBusinessLines({})).businessLines.map((l) => l.name)).toEqual(["consumer", "retail"]);
    await expect(a.deleteTeam({ name: "infra" })).rejects.toMatchObject({ code: Code.NotFound });
  });
});

describe("cost allocation by tag", () => {
  it("keeps allowed tags from the body's metadata and the sluice-tags header on the record, and names the dropped ones, on the facade and over gRPC", async () => {
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEYS.outsider, maxRetries: 0, defaultHeaders: { "sluice-tags": "env=prod,owner=ana" } });
    const { data, response } = await sdk.chat.completions.create({ model: "sim", max_tokens: 5, messages: [{ role: "user", content: "hi" }], metadata: { project: "search", feature: "autocomplete" } }).withResponse();
    expect(response.headers.get("sluice-tags-dropped")).toBe("feature,owner");
    const record = await events.recorded(response.headers.get("x-request-id") ?? data.id);
    expect(record.tags).toEqual({ project: "search", env: "prod" });

    const headers: Headers[] = [];
    const id = `tags-grpc-${Date.now()}`;
    await collect(
      grpcClient().streamChat(userRequest("sim", "hi", { metadata: { labels: { project: "ads", team: "x" } } }), {
        headers: { ...bearer(KEYS.outsider), "sluice-tags": "env=staging", "x-request-id": id },
        onHeader: (h) => headers.push(h),
      }),
    );
    expect(headers[0]!.get("sluice-tags-dropped")).toBe("team");
    expect((await events.recorded(id)).tags).toEqual({ project: "ads", env: "staging" });
    const stored = (await usageRecords(prefix)).find((r) => r.requestId === id);
    expect(stored?.tags).toEqual({ project: "ads", env: "staging" });
  });

  it("refuses a sluice-tags header it cannot read: 400 on the facade, INVALID_ARGUMENT over gRPC, nothing charged", async () => {
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...bearer(KEYS.outsider), "sluice-tags": "project" },
      body: JSON.stringify({ model: "sim", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/^sluice-tags: a tag without =/);
    const failure = await rpcFailure(collect(grpcClient().streamChat(userRequest("sim", "hi"), { headers: { ...bearer(KEYS.outsider), "sluice-tags": "a=1,a=2" } })));
    expect(failure.code).toBe(Code.InvalidArgument);
    expect(failure.rawMessage).toMatch(/sluice-tags: a given twice/);
  });
});
