import OpenAI, { toFile } from "openai";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminClient } from "./helpers/admin.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { inspector, type OwnRedis, startOwnRedis, testPrefix } from "./helpers/redis.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

/**
 * Issue 43, item 24: a Redis restarted empty took with it the usage
 * records (and audit events) still waiting in its streams: with batches
 * running, 7 ledger rows for 10 answered lines. Each replica now keeps a
 * copy of what it handed to a stream until it sees it in the database, and
 * writes what the stream lost. A redis-server of this test's own, killed
 * and started again empty (no persistence); the ledger's and the audit
 * log's drains do not run on their own here (a minute's interval), so
 * every record is still only in Redis when it goes.
 */
const ADMIN = "sk-test-admin-restart-6a8c0e2b4d1f3957";
const KEY = "sk-test-restart-key-1d3f5b7a9c0e2468";
const PRICE = { inputPerMTok: 1_000, outputPerMTok: 2_000 };

let redis: OwnRedis;
const prefix = testPrefix("restart");
let db: OwnDatabase;
let h: Harness;
const events = tenancyEvents();

beforeAll(async () => {
  redis = await startOwnRedis();
  db = await ownDatabase();
  h = await startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: { chat: { provider: "simulator", model: "sim-1?tokens=3", price: PRICE } },
    }),
    env: { ADMIN, KEY },
    auth: { adminKeyEnv: "ADMIN", tagKeys: ["batch_id"], keys: [{ name: "restart-key", keyEnv: "KEY" }] },
    store: { redis: { url: redis.url, prefix, failMode: "open", timeoutMs: 2_000 }, postgres: { url: db.url, poolSize: 4 } },
    ledger: { flushMs: 60_000 },
    compliance: { audit: { flushMs: 60_000 } },
    batch: { concurrency: 2 },
    observer: events.observer,
  });
});
afterAll(async () => {
  await h?.close();
  await redis?.kill();
  await db?.drop();
});

async function rows<T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

describe("a Redis that comes back empty", () => {
  it("loses no usage record and no audit event: each replica writes what it settled and the stream lost", async () => {
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { response } = await sdk.chat.completions.create({ model: "chat", messages: [{ role: "user", content: `q${i}` }] }).withResponse();
      ids.push((await events.recorded(response.headers.get("x-request-id")!)).id!);
    }
    // A batch of 10 lines, run to the end: its usage records too are only in the stream.
    const lines = Array.from({ length: 10 }, (_, i) => JSON.stringify({ custom_id: `line-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "chat", messages: [{ role: "user", content: `line ${i}` }] } })).join("\n");
    const file = await sdk.files.create({ file: await toFile(Buffer.from(lines), "lines.jsonl"), purpose: "batch" });
    const batch = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    await h.sluice.batches.settled(batch.id);
    expect(await sdk.batches.retrieve(batch.id)).toMatchObject({ status: "completed", request_counts: { completed: 10 } });
    await adminClient(h.url, ADMIN).createTeam({ name: "kept-team" });
    // Everything has reached Redis, nothing the database.
    await events.until(() => events.usage.filter((e) => e.record.key === "restart-key" && e.result === "stored").length >= 15);
    // The audit event's add to its stream is off the admin call's path: wait until Redis has it.
    const look = await inspector(redis.url);
    try {
      for (let i = 0; i < 1_000 && (await look.xLen(`${prefix}audit`)) < 1; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await look.xLen(`${prefix}audit`)).toBe(1);
      expect(await look.xLen(`${prefix}usage`)).toBe(15);
    } finally {
      look.destroy();
    }
    expect(await rows("SELECT id FROM sluice_ledger")).toEqual([]);

    await redis.kill();
    await redis.restart();

    await h.sluice.ledger!.flush();
    await h.sluice.audit!.flush();
    const ledger = await rows<{ id: string; tags: Record<string, string> }>("SELECT id, tags FROM sluice_ledger WHERE key_name = 'restart-key'");
    expect(ledger.map((r) => r.id)).toEqual(expect.arrayContaining(ids));
    expect(ledger.filter((r) => r.tags.batch_id === batch.id)).toHaveLength(10);
    expect(ledger).toHaveLength(15);
    expect(h.sluice.ledger!.stats()).toMatchObject({ restored: 15, held: 0 });
    expect(
      h
        .logs()
        .filter((l) => l.event === "ledger.restored")
        .reduce((n, l) => n + Number(l.records), 0),
    ).toBe(15);
    const audit = await rows<{ action: string; target: string }>("SELECT action, target FROM sluice_audit WHERE action = 'team.create'");
    expect(audit).toEqual([{ action: "team.create", target: "kept-team" }]);

    // Once written, nothing is written twice: a later flush (and the stream, had it kept them) changes nothing.
    await h.sluice.ledger!.flush();
    expect(await rows("SELECT id FROM sluice_ledger WHERE key_name = 'restart-key'")).toHaveLength(15);
  }, 120_000);
});
