import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Period } from "../gen/sluice/admin/v1/admin_service_pb.js";
import { migrate } from "../src/db/migrations.js";
import { openPgDatabase } from "../src/db/pg-database.js";
import { insertRows, rowOf } from "../src/ledger/ledger-rows.js";
import { costPicos } from "../src/usage/cost.js";
import type { UsageRecord } from "../src/usage/usage-record.js";
import { adminClient } from "./helpers/admin.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { dropPrefix, SHARED_REDIS_URL, testPrefix } from "./helpers/redis.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

/**
 * A target priced by the catalog spends from a budget, and the ledger row
 * on a real PostgreSQL server carries every count a price applies to. The
 * simulator's model is `sim-1`, so the target names its entry with
 * `catalog:`; the entry comes from an operator's catalog file that prices
 * every field (reasoning, per request, per search included).
 */
const KEY = "sk-test-catalog-ledger-3f1a7c9e5b";
const ADMIN = "sk-test-catalog-ledger-admin-7d2b";
const ENTRY = {
  id: "acme/priced-everything",
  provider: "acme",
  match: "explicit",
  price: { inputPerMTok: 3, cachedInputPerMTok: 0.3, cacheWrite5mPerMTok: 3.75, cacheWrite1hPerMTok: 6, outputPerMTok: 15, reasoningPerMTok: 20, perRequest: 0.002, perWebSearch: 0.01 },
};

let database: OwnDatabase;
const events = tenancyEvents();
const catalogFile = join(tmpdir(), `sluice-catalog-ledger-${process.pid}.json`);
const prefix = testPrefix("catalog-ledger");

beforeAll(async () => {
  writeFileSync(catalogFile, JSON.stringify({ version: "ops-1", models: [ENTRY] }));
  database = await ownDatabase();
});
afterAll(async () => {
  await database?.drop();
  await dropPrefix(prefix);
});

/** Straight to PostgreSQL, and through Redis's usage stream first (its entry's fields become the row). */
const STORES = {
  "PostgreSQL only": () => ({ postgres: { url: database.url, poolSize: 2 } }),
  "Redis usage stream, then PostgreSQL": () => ({ redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed" as const, timeoutMs: 5_000 }, postgres: { url: database.url, poolSize: 2 } }),
};

type Row = Record<string, unknown>;

async function ledgerRows(requestId: string): Promise<Row[]> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    return (await client.query<Row>("SELECT * FROM sluice_ledger WHERE request_id = $1", [requestId])).rows;
  } finally {
    await client.end();
  }
}

const asText = (row: Row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, String(v)]));

describe.each(Object.entries(STORES))("a catalog-priced target (%s)", (name, store) => {
  let h: Harness;
  // A key name per gateway: both spend in one database and, with Redis, one prefix.
  const keyName = `catalog-key-${name.startsWith("Redis") ? "redis" : "postgres"}`;
  beforeAll(async () => {
    h = await startHarness({
      routing: (sim) => ({
        providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
        models: { priced: { provider: "simulator", model: "sim-1?tokens=7&reasoning=5", catalog: ENTRY.id } },
      }),
      env: { KEY, ADMIN },
      auth: { adminKeyEnv: "ADMIN", keys: [{ name: keyName, keyEnv: "KEY", budget: { usd: 100, period: "month" } }] },
      store: store(),
      ledger: { flushMs: 60_000 },
      catalog: { file: catalogFile },
      observer: events.observer,
    });
  });
  afterAll(() => h?.close());

  it("inherits the entry's price: a budgeted key spends, and the ledger row carries each priced count and the exact cost", async () => {
    const route = h.sluice.config.current().models.get("priced")!;
    expect(route.targets[0]).toMatchObject({ catalog: ENTRY.id, price: ENTRY.price });

    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const { response } = await sdk.chat.completions.create({ model: "priced", max_tokens: 16, messages: [{ role: "user", content: "what does the catalog say" }] }).withResponse();
    const record: UsageRecord = await events.recorded(response.headers.get("x-request-id")!);
    expect(record.inputTokens).toBeGreaterThan(0);
    expect(record).toMatchObject({ outputTokens: 12, reasoningTokens: 5 });
    expect(record.billedRequests).toBe(1);
    // 3 $/MTok input, 15 the answer, 20 its reasoning, plus $0.002 for the request: never zero, so the budget moves.
    const picos = BigInt(record.inputTokens) * 3_000_000n + 7n * 15_000_000n + 5n * 20_000_000n + 2_000n * 1_000_000n;
    expect(BigInt(record.costPicos!)).toBe(picos);
    expect(record.costMicros).toBe(Number((picos + 999_999n) / 1_000_000n));
    // The budgeted key spent it.
    const usage = await adminClient(h.url, ADMIN).getUsage({ name: keyName, period: Period.MONTH });
    expect(usage.spendUsdMicros).toBe(BigInt(record.costMicros));
    expect(usage.budgetUsdMicros).toBe(100_000_000n);

    await h.sluice.ledger!.flush();
    const rows = await ledgerRows(record.requestId);
    expect(rows).toHaveLength(1);
    expect(asText(rows[0]!)).toMatchObject({
      input_tokens: String(record.inputTokens),
      cached_input_tokens: "0",
      cache_write_5m_tokens: "0",
      cache_write_1h_tokens: "0",
      output_tokens: "12",
      reasoning_tokens: "5",
      web_searches: "0",
      billed_requests: "1",
      cost_picos: String(picos),
      cost_micros: String(record.costMicros),
    });
  });
});

describe("the ledger's columns", () => {
  it("a row with every priced count set lands in PostgreSQL with each count, and its cost is their sum at each price", async () => {
    const db = openPgDatabase(database.url, 1, () => undefined);
    try {
      await migrate(db);
      const usage = { inputTokens: 10_000, cachedInputTokens: 2_000, cacheWrite5mTokens: 1_000, cacheWrite1hTokens: 500, outputTokens: 3_000, reasoningTokens: 1_200, webSearches: 2, requests: 3 };
      const picos = costPicos(usage, ENTRY.price);
      // Fresh 6,500 × 3; reads 2,000 × 0.3; writes 1,000 × 3.75 and 500 × 6; answer 1,800 × 15; reasoning 1,200 × 20 (µ$/MTok × tokens = pico-dollars); 2 searches × 0.01 and 3 requests × 0.002 (USD → pico-dollars).
      expect(picos).toBe(6_500n * 3_000_000n + 2_000n * 300_000n + 1_000n * 3_750_000n + 500n * 6_000_000n + 1_800n * 15_000_000n + 1_200n * 20_000_000n + 2n * 10_000n * 1_000_000n + 3n * 2_000n * 1_000_000n);
      const record: UsageRecord = {
        id: `catalog-every-field-${process.pid}`,
        requestId: `req-catalog-every-field-${process.pid}`,
        key: "catalog-key",
        alias: "priced",
        target: "simulator/sim-1",
        ...usage,
        billedRequests: 3,
        costMicros: Number((picos + 999_999n) / 1_000_000n),
        costPicos: Number(picos),
        estimated: false,
        durationMs: 12,
        outcome: "completed",
        at: Date.now(),
      };
      expect(await insertRows(db, [rowOf(record, "unused")])).toBe(1);
      const rows = await ledgerRows(record.requestId);
      expect(asText(rows[0]!)).toMatchObject({
        input_tokens: "10000",
        cached_input_tokens: "2000",
        cache_write_5m_tokens: "1000",
        cache_write_1h_tokens: "500",
        output_tokens: "3000",
        reasoning_tokens: "1200",
        web_searches: "2",
        billed_requests: "3",
        cost_picos: String(picos),
      });
    } finally {
      await db.close();
    }
  });
});
