import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SpendDimension } from "../gen/sluice/admin/v1/admin_service_pb.js";
import { periodOf } from "../src/usage/periods.js";
import { adminClient } from "./helpers/admin.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { dropPrefix, inspector, SHARED_REDIS_URL, testPrefix, usageRecords } from "./helpers/redis.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

/**
 * A name is not an identity (issue 43, item 7): a key created under a
 * revoked key's name, or a team created again under a deleted team's name,
 * is another tenant, and nothing kept about the first (cache entries, rate
 * windows, spend, batches and files) reaches it. Over the wire, on the
 * stores replicas share: Redis for counters and exact entries, PostgreSQL
 * (the embedded PGlite) for semantic entries and batches.
 */

const ADMIN_KEY = "sk-test-admin-identity-5c2e8a1f7b3d9046";
/** The embedded PGlite takes seconds to start on a loaded machine (TOOLCHAIN). */
const DB_START_MS = 90_000;
const prefix = testPrefix("identity");
const events = tenancyEvents();
let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: {
        emb: { provider: "sim", model: "sim-embed" },
        faq: { provider: "sim", model: "sim-1?tokens=5&seed=3", cache: { exact: { ttlS: 600 }, semantic: { embeddingModel: "emb", threshold: 0.9 } } },
        plain: { provider: "sim", model: "sim-1?tokens=3" },
        crewfaq: { provider: "sim", model: "sim-1?tokens=5&seed=4", cache: { exact: { ttlS: 600 }, scope: "team" } },
      },
    }),
    env: { SLUICE_ADMIN_KEY: ADMIN_KEY },
    auth: { adminKeyEnv: "SLUICE_ADMIN_KEY" },
    store: { redis: { url: SHARED_REDIS_URL, prefix }, postgres: {} },
    // Far beyond a healthy lookup on a loaded machine: a slow query must not turn an expected hit into a miss.
    cache: { lookupTimeoutMs: 5_000 },
    observer: events.observer,
  });
  await h.waitForLog((l) => l.event === "db.ready", DB_START_MS);
}, DB_START_MS + 20_000);
afterAll(async () => {
  await h.close();
  await dropPrefix(prefix);
});

const admin = () => adminClient(h.url, ADMIN_KEY);
const sdk = (key: string) => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: key, maxRetries: 0 });

/** One question; its cache verdict, and the usage record once settled. */
async function ask(key: string, model: string, question: string) {
  const { response } = await sdk(key)
    .chat.completions.create({ model, max_tokens: 16, messages: [{ role: "user", content: question }] })
    .withResponse();
  const requestId = response.headers.get("x-request-id")!;
  return { cache: response.headers.get("sluice-cache"), requestId, record: await events.recorded(requestId) };
}

/** Waits until a miss's answer is in the cache layers named (exact, semantic). */
async function stored(requestId: string, layers: readonly string[]) {
  for (const layer of layers) await h.waitForLog((l) => l.event === "cache.stored" && l.layer === layer && l.requestId === requestId);
}

describe("a key created under a revoked key's name", () => {
  it("reads none of the old key's cache entries, exact or semantic, and sees none of its files or batches", async () => {
    const first = await admin().createKey({ name: "reused" });
    const old = first.key;
    const miss = await ask(old, "faq", "What is the refund policy for annual plans?");
    expect(miss.cache).toBe("miss");
    await stored(miss.requestId, ["exact", "semantic"]);
    // The old key's own entries work: what the new key does not see is there to be seen.
    expect((await ask(old, "faq", "What is the refund policy for annual plans?")).cache).toBe("hit-exact");
    expect((await ask(old, "faq", "What is the refund policy for annual plans")).cache).toBe("hit-semantic");
    const file = await sdk(old).files.create({
      file: await toFile(Buffer.from(`${JSON.stringify({ custom_id: "a", method: "POST", url: "/v1/chat/completions", body: { model: "faq", messages: [{ role: "user", content: "hi" }] } })}\n`), "in.jsonl"),
      purpose: "batch",
    });
    const batch = await sdk(old).batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });

    await admin().revokeKey({ name: "reused" });
    const second = await admin().createKey({ name: "reused" });
    expect(second.info!.id).not.toBe(first.info!.id);
    const key = second.key;

    // The reworded question first: nothing of the new key's is stored yet, so any hit would be the old key's.
    expect((await ask(key, "faq", "What is the refund policy for annual plans")).cache).toBe("miss");
    // The original may now find the new key's own reworded entry (semantic), never the old key's exact one.
    expect((await ask(key, "faq", "What is the refund policy for annual plans?")).cache).not.toBe("hit-exact");
    await expect(sdk(key).files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });
    await expect(sdk(key).batches.retrieve(batch.id)).rejects.toMatchObject({ status: 404 });
    expect((await sdk(key).batches.list()).data).toEqual([]);
  });

  it("starts with none of the old key's counters: its rate window and its usage", async () => {
    const first = await admin().createKey({ name: "counted", limits: { requestsPerMinute: 3 } });
    for (let i = 0; i < 3; i++) await ask(first.key, "plain", `counted question ${i}`);
    await expect(ask(first.key, "plain", "one too many")).rejects.toMatchObject({ status: 429 });
    expect((await admin().getUsage({ name: "counted" })).requests).toBe(3n);

    await admin().revokeKey({ name: "counted" });
    const second = await admin().createKey({ name: "counted", limits: { requestsPerMinute: 3 } });
    // Within the same minute: the old key's window is full, the new key's empty.
    const fresh = await ask(second.key, "plain", "counted question 0");
    expect(fresh.record).toMatchObject({ key: "counted", keyId: second.info!.id });
    const usage = await admin().getUsage({ name: "counted" });
    expect(usage).toMatchObject({ id: second.info!.id, requests: 1n });
    // The revoked key's usage is its own still, read by its id.
    expect((await admin().getUsage({ id: first.info!.id })).requests).toBe(3n);
    // Usage records in the shared stream carry each key's id beside the name.
    const records = (await usageRecords(prefix)).filter((r) => r.key === "counted");
    expect(new Set(records.map((r) => r.keyId))).toEqual(new Set([first.info!.id, second.info!.id]));
    // And so do the ledger and its reports: one name, two keys, two rows.
    await h.sluice.ledger!.flush();
    const report = await admin().getSpendReport({ start: timestampFromMs(Date.now() - 3_600_000), end: timestampFromMs(Date.now() + 60_000), groupBy: [SpendDimension.KEY], filter: { keys: ["counted"] } });
    expect(report.rows.map((r) => [r.group, Number(r.requests)]).sort((a, b) => Number(a[1]) - Number(b[1]))).toEqual([
      [{ key: "counted", key_id: second.info!.id }, 1],
      [{ key: "counted", key_id: first.info!.id }, 3],
    ]);
  });
});

describe("a team created again under a deleted team's name", () => {
  it("reads none of the old team's cache entries (scope team)", async () => {
    const crew = await admin().createTeam({ name: "crew" });
    const a = await admin().createKey({ name: "crew-a", team: "crew" });
    const b = await admin().createKey({ name: "crew-b", team: "crew" });
    const miss = await ask(a.key, "crewfaq", "Where is the team handbook?");
    expect(miss.cache).toBe("miss");
    await stored(miss.requestId, ["exact"]);
    // One team, one scope: its other key reads the entry.
    expect((await ask(b.key, "crewfaq", "Where is the team handbook?")).cache).toBe("hit-exact");

    await admin().revokeKey({ name: "crew-a" });
    await admin().revokeKey({ name: "crew-b" });
    await admin().deleteTeam({ name: "crew" });
    const again = await admin().createTeam({ name: "crew" });
    const c = await admin().createKey({ name: "crew-c", team: "crew" });
    // The old team's entry is alive; the new team's key does not read it.
    const fresh = await ask(c.key, "crewfaq", "Where is the team handbook?");
    expect(fresh.cache).toBe("miss");
    // Usage records (and ledger rows) tell the two teams apart by id; both are named crew.
    expect(again.team!.id).not.toBe(crew.team!.id);
    expect(miss.record).toMatchObject({ team: "crew", teamId: crew.team!.id });
    expect(fresh.record).toMatchObject({ team: "crew", teamId: again.team!.id });
  });

  it("starts with none of the old team's counters", async () => {
    await admin().createTeam({ name: "band", limits: { requestsPerMinute: 3 } });
    const a = await admin().createKey({ name: "band-a", team: "band" });
    for (let i = 0; i < 3; i++) await ask(a.key, "plain", `band question ${i}`);
    await expect(ask(a.key, "plain", "fourth in a minute")).rejects.toMatchObject({ status: 429 });

    await admin().revokeKey({ name: "band-a" });
    await admin().deleteTeam({ name: "band" });
    await admin().createTeam({ name: "band", limits: { requestsPerMinute: 3 } });
    const b = await admin().createKey({ name: "band-b", team: "band" });
    // Within the same minute: the old team's window is full, the new team's empty.
    for (let i = 0; i < 3; i++) expect((await ask(b.key, "plain", `band question ${i}`)).record).toMatchObject({ team: "band", outcome: "completed" });
    await expect(ask(b.key, "plain", "fourth in a minute")).rejects.toMatchObject({ status: 429 });
  });
});

describe("upgrading from a version that kept state under names", () => {
  it("carries each key's and team's rollups of the running periods to its id at the first start, once", async () => {
    const own = testPrefix("identity-upgrade");
    const KEY = "sk-test-identity-upgrade-7e1a3c5b9d2f4086";
    const month = periodOf("month", Date.now()).id;
    const redis = await inspector();
    try {
      // What a gateway before ids left: the key's and its team's month rollups under their names.
      await redis.hSet(`${own}use:{legacy}:${month}`, { requests: "7", spend: "400000", input: "70", output: "35" });
      await redis.hSet(`${own}use:{~team:finance}:${month}`, { requests: "9", spend: "500000" });
      const upgraded = await startHarness({
        models: { sim: "sim-1?tokens=3" },
        env: { SLUICE_ADMIN_KEY: ADMIN_KEY, LEGACY_KEY: KEY },
        auth: { adminKeyEnv: "SLUICE_ADMIN_KEY", keys: [{ name: "legacy", keyEnv: "LEGACY_KEY", team: "finance", budget: { usd: 1, period: "month" } }], teams: [{ name: "finance" }] },
        store: { redis: { url: SHARED_REDIS_URL, prefix: own } },
      });
      try {
        await upgraded.waitForLog((l) => l.event === "tenancy.named_state_carried" && l.rollups === 2);
        expect(await adminClient(upgraded.url, ADMIN_KEY).getUsage({ name: "legacy" })).toMatchObject({ requests: 7n, spendUsdMicros: 400_000n, budgetUsdMicros: 1_000_000n });
        expect(await redis.hGetAll(`${own}use:{~t:finance}:${month}`)).toMatchObject({ requests: "9", spend: "500000" });
        expect(await redis.exists(`${own}use:{legacy}:${month}`)).toBe(0);
        expect(await redis.exists(`${own}ids:carried`)).toBe(1);
      } finally {
        await upgraded.close();
      }
    } finally {
      redis.destroy();
      await dropPrefix(own);
    }
  });
});
