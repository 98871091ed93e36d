import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import OpenAI from "openai";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SpendDimension } from "../gen/sluice/admin/v1/admin_service_pb.js";
import { bounded } from "../src/db/database.js";
import { openPgDatabase } from "../src/db/pg-database.js";
import { expireRows } from "../src/ledger/ledger-rows.js";
import type { UsageRecord } from "../src/usage/usage-record.js";
import { adminClient } from "./helpers/admin.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { dropPrefix, SHARED_REDIS_URL, testPrefix } from "./helpers/redis.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

/**
 * The ledger on a real PostgreSQL server (the machine's, or the one
 * .ci/run starts): URL mode, in a database of this test's own, created and
 * dropped here. Debian's server has no pgvector: the semantic cache's
 * steps wait, and the ledger's are applied all the same.
 */
const ADMIN = "sk-test-admin-pg-ledger-1a3c5e7b9d2f4068";
const KEY = "sk-test-pg-ledger-8b0d2f4a6c1e3957";
const PRICE = { inputPerMTok: 1_000, outputPerMTok: 2_000 };
const prefix = testPrefix("pg-ledger");

let database: OwnDatabase;
let h: Harness;
const events = tenancyEvents();

beforeAll(async () => {
  database = await ownDatabase();
  h = await startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: { sim: { provider: "simulator", model: "sim-1?tokens=4", price: PRICE } },
    }),
    env: { ADMIN, KEY },
    auth: { adminKeyEnv: "ADMIN", keys: [{ name: "pg-key", keyEnv: "KEY" }] },
    store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000 }, postgres: { url: database.url, poolSize: 2 } },
    ledger: { flushMs: 60_000 },
    observer: events.observer,
  });
});
afterAll(async () => {
  await h?.close();
  await database?.drop();
  await dropPrefix(prefix);
});

describe("the ledger on a PostgreSQL server", () => {
  it("holds one row per call, and reports agree with GetUsage", async () => {
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const records: UsageRecord[] = [];
    for (let i = 0; i < 6; i++) {
      const { response } = await sdk.chat.completions.create({ model: "sim", max_tokens: 8, messages: [{ role: "user", content: `q${i}` }] }).withResponse();
      records.push(await events.recorded(response.headers.get("x-request-id")!));
    }
    await h.sluice.ledger!.flush();
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const versions = (await client.query<{ version: number }>("SELECT version FROM sluice_schema_migrations ORDER BY version")).rows.map((r) => r.version);
      expect(versions).toContain(3);
      const vector = (await client.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).rowCount ?? 0;
      // Without pgvector the semantic cache's steps wait, and the gateway says so.
      if (vector === 0) expect(h.logs().some((l) => l.event === "db.extension_missing")).toBe(true);
      const rows = (await client.query<{ id: string; cost_micros: string }>("SELECT id, cost_micros FROM sluice_ledger WHERE key_name = 'pg-key'")).rows;
      expect(rows.map((r) => r.id).sort()).toEqual(records.map((r) => r.id!).sort());
      expect(rows.reduce((sum, r) => sum + Number(r.cost_micros), 0)).toBe(records.reduce((sum, r) => sum + r.costMicros, 0));
    } finally {
      await client.end();
    }
    const admin = adminClient(h.url, ADMIN);
    const report = await admin.getSpendReport({ start: timestampFromMs(Date.now() - 3_600_000), end: timestampFromMs(Date.now() + 60_000), groupBy: [SpendDimension.KEY] });
    const usage = await admin.getUsage({ name: "pg-key" });
    expect(report.rows).toHaveLength(1);
    expect(report.rows[0]).toMatchObject({ group: { key: "pg-key" }, requests: usage.requests, costUsdMicros: usage.spendUsdMicros });
  });

  it("cancels a statement past its bound in the database, and removes rows past the retention in bounded batches", async () => {
    const db = openPgDatabase(database.url, 1, () => undefined);
    try {
      await expect(bounded(db, 100, (q) => q("SELECT pg_sleep(5)"))).rejects.toThrow(/statement timeout/);
      // The connection is usable after the cancel.
      expect((await db.query<{ one: number }>("SELECT 1 AS one")).rows[0]!.one).toBe(1);
      await db.query(
        "INSERT INTO sluice_ledger (id, at, request_id, key_name, alias, target, input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, cost_micros, estimated, duration_ms, outcome) SELECT 'old-' || g, now() - interval '500 days', 'r', 'old-key', 'a', 't', 0, 0, 0, 0, 1, false, 1, 'completed' FROM generate_series(1, 25) AS g",
      );
      expect(await expireRows(db, 400, 10)).toBe(10);
      expect(await expireRows(db, 400, 100)).toBe(15);
      expect(await expireRows(db, 400, 100)).toBe(0);
      // Recent rows stay.
      expect(Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM sluice_ledger WHERE key_name = 'pg-key'")).rows[0]!.n)).toBe(6);
    } finally {
      await db.close();
    }
  });
});
