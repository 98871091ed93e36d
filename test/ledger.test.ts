import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SpendDimension } from "../gen/sluice/admin/v1/admin_service_pb.js";
import { sha256Hex } from "../src/config/key-hash.js";
import { migrate } from "../src/db/migrations.js";
import { openPgDatabase } from "../src/db/pg-database.js";
import { createStreamDrain } from "../src/ledger/stream-drain.js";
import { keyId } from "../src/tenancy/principal.js";
import type { UsageRecord } from "../src/usage/usage-record.js";
import { adminClient } from "./helpers/admin.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { dropPrefix, freePort, SHARED_REDIS_URL, storeClient, testPrefix } from "./helpers/redis.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

/**
 * The spend ledger over the wire: real gateways, real Redis, and a real
 * PostgreSQL wire protocol (PGlite served by pglite-socket, on a port of
 * our own, so a test can stop the server and start it again). The
 * ledger must equal the calls served, to the record and the micro-dollar,
 * after the database was away and after a replica died mid-batch.
 */

const KEY = "sk-test-ledger-2b4d6f8a0c1e3957";
const PRICE = { inputPerMTok: 1_000, outputPerMTok: 2_000 };
const DB_START_MS = 90_000;

let db: PGlite;
let server: PGLiteSocketServer;
let port = 0;
let url = "";

async function startServer() {
  server = new PGLiteSocketServer({ db, port, host: "127.0.0.1", maxConnections: 16 });
  await server.start();
}

beforeAll(async () => {
  db = await PGlite.create({ extensions: { vector } });
  port = await freePort();
  url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  await startServer();
}, DB_START_MS);
afterAll(async () => {
  await server.stop();
  await db.close();
});

interface LedgerRow extends Record<string, unknown> {
  id: string;
  key_name: string;
  team: string | null;
  tags: Record<string, string>;
  cost_micros: string;
  request_id: string;
  replica: string | null;
}

async function rowsOf(requestIds: readonly string[]): Promise<LedgerRow[]> {
  return (await db.query<LedgerRow>("SELECT * FROM sluice_ledger WHERE request_id = ANY($1)", [requestIds])).rows;
}

function gateway(options: { store: Parameters<typeof startHarness>[0] extends infer O ? (O extends { store?: infer S } ? S : never) : never; events: ReturnType<typeof tenancyEvents>; claimIdleMs?: number }) {
  return startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: { sim: { provider: "simulator", model: "sim-1?tokens=4", price: PRICE } },
    }),
    env: { LEDGER_KEY: KEY },
    auth: { keys: [{ name: "ledger-key", keyEnv: "LEDGER_KEY", team: "finance" }], teams: [{ name: "finance" }], tagKeys: ["project"] },
    store: options.store,
    // A long flush interval: the tests write with flush(), so what a test sees never depends on a timer.
    ledger: { flushMs: 60_000, batchSize: 7, claimIdleMs: options.claimIdleMs ?? 30_000 },
    observer: options.events.observer,
  });
}

/** `count` completions through the OpenAI SDK; each one's usage record, once settled. */
async function serve(h: Harness, events: ReturnType<typeof tenancyEvents>, count: number, project = "atlas"): Promise<UsageRecord[]> {
  const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0, defaultHeaders: { "sluice-tags": `project=${project}` } });
  const records: UsageRecord[] = [];
  for (let i = 0; i < count; i++) {
    const { response } = await sdk.chat.completions.create({ model: "sim", max_tokens: 8, messages: [{ role: "user", content: `question ${i}` }] }).withResponse();
    records.push(await events.recorded(response.headers.get("x-request-id")!));
  }
  return records;
}

const micros = (records: readonly UsageRecord[]) => records.reduce((sum, r) => sum + r.costMicros, 0);
const rowMicros = (rows: readonly LedgerRow[]) => rows.reduce((sum, r) => sum + Number(r.cost_micros), 0);

describe("the spend ledger without Redis", () => {
  it(
    "writes each record this replica settles once, with key, team and tags; while the database is away the records wait, then every one is written",
    async () => {
      const events = tenancyEvents();
      const h = await gateway({ store: { postgres: { url, poolSize: 2 } }, events });
      try {
        const before = await serve(h, events, 5);
        await h.sluice.ledger!.flush();
        const rows = await rowsOf(before.map((r) => r.requestId));
        expect(rows).toHaveLength(5);
        // By id too: the name is for people, the id says which key it was (a later key may bear the name).
        expect(rows[0]).toMatchObject({ key_name: "ledger-key", key_id: keyId(sha256Hex(KEY)), team: "finance", team_id: "finance", tags: { project: "atlas" } });
        expect(rowMicros(rows)).toBe(micros(before));
        expect(new Set(rows.map((r) => r.id))).toEqual(new Set(before.map((r) => r.id)));

        // The database goes away: calls are served all the same, their records wait in memory.
        await server.stop();
        const during = await serve(h, events, 9, "apollo");
        await h.sluice.ledger!.flush();
        expect(h.sluice.ledger!.stats().failures).toBeGreaterThan(0);
        await startServer();
        await h.sluice.ledger!.flush();
        const after = await rowsOf(during.map((r) => r.requestId));
        expect(after).toHaveLength(9);
        expect(rowMicros(after)).toBe(micros(during));
        expect(h.sluice.ledger!.stats()).toMatchObject({ written: 14, duplicates: 0, dropped: 0 });
      } finally {
        await h.close();
      }
    },
    DB_START_MS,
  );
});

describe("the spend ledger with Redis", () => {
  const prefix = testPrefix("ledger");
  afterAll(async () => {
    await dropPrefix(prefix);
  });

  it(
    "two replicas drain one usage stream into one ledger: every record once, through an outage of the database and a replica that died mid-batch",
    async () => {
      const events = tenancyEvents();
      const store = { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed" as const, timeoutMs: 5_000 }, postgres: { url, poolSize: 2 } };
      const a = await gateway({ store, events, claimIdleMs: 200 });
      const b = await gateway({ store, events, claimIdleMs: 200 });
      try {
        const served = [...(await serve(a, events, 6)), ...(await serve(b, events, 6))];
        await Promise.all([a.sluice.ledger!.flush(), b.sluice.ledger!.flush()]);
        const first = await rowsOf(served.map((r) => r.requestId));
        expect(first).toHaveLength(12);
        expect(rowMicros(first)).toBe(micros(served));

        // The database goes away under load: the records stay pending in Redis, and are written when it is back.
        await server.stop();
        const during = [...(await serve(a, events, 8, "apollo")), ...(await serve(b, events, 8, "apollo"))];
        await Promise.all([a.sluice.ledger!.flush(), b.sluice.ledger!.flush()]);
        await startServer();
        await Promise.all([a.sluice.ledger!.flush(), b.sluice.ledger!.flush()]);
        const afterOutage = await rowsOf(during.map((r) => r.requestId));
        expect(afterOutage).toHaveLength(16);
        expect(rowMicros(afterOutage)).toBe(micros(during));

        // A third replica reads a batch and dies before writing it: its database never answers, and it never acknowledges.
        const redis = await storeClient();
        const pg = openPgDatabase(url, 1, () => undefined);
        await migrate(pg);
        const died = createStreamDrain({
          client: redis,
          stream: `${prefix}usage`,
          group: "sluice-ledger",
          consumer: "replica-that-dies",
          database: () => new Promise(() => undefined),
          batchSize: 50,
          flushMs: 60_000,
          claimIdleMs: 60_000,
          timeoutMs: 5_000,
          onEvent: () => undefined,
        });
        // Claims so far were between live replicas: after the outage each replica's failed batch sat idle past claimIdleMs,
        // so either may have taken over the other's (written once all the same). Only what b claims from here on is the dead replica's.
        const claimedBefore = b.sluice.ledger!.stats().claimed;
        const orphaned = [...(await serve(a, events, 5, "zeus"))];
        void died.drainNow();
        await until(async () => (await redis.xpending(`${prefix}usage`, "sluice-ledger"))[0] === orphaned.length);
        await died.close(0);
        // Nobody else may have them until they have been idle for claimIdleMs; then a live replica takes them over.
        await until(async () => {
          await b.sluice.ledger!.flush();
          return (await rowsOf(orphaned.map((r) => r.requestId))).length === orphaned.length;
        });
        expect(b.sluice.ledger!.stats().claimed - claimedBefore).toBe(orphaned.length);
        expect((await redis.xpending(`${prefix}usage`, "sluice-ledger"))[0]).toBe(0);
        redis.disconnect();
        await pg.close();

        // In all: one row per call served, to the record and to the micro-dollar.
        const all = [...served, ...during, ...orphaned];
        const rows = await rowsOf(all.map((r) => r.requestId));
        expect(rows).toHaveLength(all.length);
        expect(new Set(rows.map((r) => r.id)).size).toBe(all.length);
        expect(rowMicros(rows)).toBe(micros(all));
        expect(new Set(rows.map((r) => r.replica)).size).toBe(2);
      } finally {
        await a.close();
        await b.close();
      }
    },
    DB_START_MS,
  );
});

describe("spend reports", () => {
  const ADMIN = "sk-test-admin-reports-7d9f1b3a5c2e4068";
  const A = "sk-test-report-a-0c2e4a6b8d1f3957";
  const B = "sk-test-report-b-9e1a3c5b7d2f4068";

  it(
    "group and filter the ledger by team, key, tag and day, page through it, agree with GetUsage and the records, and download as CSV",
    async () => {
      const events = tenancyEvents();
      const h = await startHarness({
        routing: (sim) => ({
          providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
          models: { sim: { provider: "simulator", model: "sim-1?tokens=4", price: PRICE }, other: { provider: "simulator", model: "sim-2?tokens=6", price: PRICE } },
        }),
        env: { ADMIN, A, B },
        auth: {
          adminKeyEnv: "ADMIN",
          keys: [
            { name: "report-a", keyEnv: "A", team: "reporting" },
            { name: "report-b", keyEnv: "B", limits: { requestsPerMinute: 1 } },
          ],
          teams: [{ name: "reporting", businessLine: "insights" }],
          businessLines: [{ name: "insights" }],
          tagKeys: ["project"],
        },
        store: { postgres: { url, poolSize: 2 } },
        ledger: { flushMs: 60_000 },
        observer: events.observer,
      });
      try {
        const start = Date.now() - 1_000;
        const served: UsageRecord[] = [];
        const ask = async (key: string, model: string, project: string) => {
          const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: key, maxRetries: 0, defaultHeaders: { "sluice-tags": `project=${project}` } });
          const { response } = await sdk.chat.completions.create({ model, max_tokens: 8, messages: [{ role: "user", content: "report" }] }).withResponse();
          served.push(await events.recorded(response.headers.get("x-request-id")!));
        };
        await ask(A, "sim", "atlas");
        await ask(A, "sim", "atlas");
        await ask(A, "other", "apollo");
        await ask(B, "sim", "atlas");
        // Over its limit: refused before any provider is called, and counted apart from the calls.
        const refused = await fetch(`${h.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${B}` },
          body: JSON.stringify({ model: "sim", messages: [{ role: "user", content: "again" }] }),
        });
        expect(refused.status).toBe(429);
        await h.sluice.ledger!.flush();
        const refusals = await db.query<{ key_name: string; level: string; reason: string; count: string }>("SELECT key_name, level, reason, count FROM sluice_ledger_refusals WHERE key_name = 'report-b'");
        expect(refusals.rows.map((r) => ({ ...r, count: Number(r.count) }))).toEqual([{ key_name: "report-b", level: "key", reason: "requests", count: 1 }]);
        const end = Date.now() + 60_000;
        const admin = adminClient(h.url, ADMIN);
        const range = { start: timestampFromMs(start), end: timestampFromMs(end), filter: { keys: ["report-a", "report-b"] } };
        const cost = (key: string, project?: string) => served.filter((r) => r.key === key && (project === undefined || r.tags?.project === project)).reduce((sum, r) => sum + r.costMicros, 0);

        const byTeamAndTag = await admin.getSpendReport({ ...range, groupBy: [SpendDimension.TEAM, SpendDimension.TAG], groupByTag: "project" });
        expect(byTeamAndTag.rows.map((r) => [r.group, Number(r.requests), Number(r.costUsdMicros)])).toEqual([
          [{ team: "", team_id: "", "tag:project": "atlas" }, 1, cost("report-b")],
          [{ team: "reporting", team_id: "reporting", "tag:project": "apollo" }, 1, cost("report-a", "apollo")],
          [{ team: "reporting", team_id: "reporting", "tag:project": "atlas" }, 2, cost("report-a", "atlas")],
        ]);

        // The same figures as GetUsage (the rollups) and as the records the streams settled.
        const byKey = await admin.getSpendReport({ ...range, groupBy: [SpendDimension.KEY] });
        const usage = await admin.getUsage({ name: "report-a" });
        expect(byKey.rows[0]).toMatchObject({ group: { key: "report-a" }, requests: usage.requests, costUsdMicros: usage.spendUsdMicros, outputTokens: usage.outputTokens });

        // Pages of one row follow each other; a token belongs to its query.
        const first = await admin.getSpendReport({ ...range, groupBy: [SpendDimension.ALIAS, SpendDimension.KEY], pageSize: 1 });
        expect(first.rows).toHaveLength(1);
        const second = await admin.getSpendReport({ ...range, groupBy: [SpendDimension.ALIAS, SpendDimension.KEY], pageSize: 1, pageToken: first.nextPageToken });
        const third = await admin.getSpendReport({ ...range, groupBy: [SpendDimension.ALIAS, SpendDimension.KEY], pageSize: 1, pageToken: second.nextPageToken });
        const idOf = (key: string) => keyId(sha256Hex(key === "report-a" ? A : B));
        expect([first, second, third].map((p) => p.rows[0]!.group)).toEqual([
          { alias: "other", key: "report-a", key_id: idOf("report-a") },
          { alias: "sim", key: "report-a", key_id: idOf("report-a") },
          { alias: "sim", key: "report-b", key_id: idOf("report-b") },
        ]);
        expect(third.nextPageToken).toBe("");
        await expect(admin.getSpendReport({ ...range, groupBy: [SpendDimension.KEY], pageToken: first.nextPageToken })).rejects.toMatchObject({ code: Code.InvalidArgument });
        await expect(admin.getSpendReport({ start: timestampFromMs(0), end: timestampFromMs(end) })).rejects.toMatchObject({ code: Code.InvalidArgument, rawMessage: expect.stringContaining("at most 400 days") });
        await expect(admin.getSpendReport({ ...range, groupBy: [SpendDimension.TAG], groupByTag: "secret" })).rejects.toMatchObject({ code: Code.InvalidArgument });

        // The CSV: the same report, for a spreadsheet, behind the admin key.
        const csvUrl = `${h.url}/admin/v1/spend.csv?start=${new Date(start).toISOString()}&end=${new Date(end).toISOString()}&group_by=key,business_line&key=report-a&key=report-b`;
        expect((await fetch(csvUrl)).status).toBe(401);
        const csv = await fetch(csvUrl, { headers: { authorization: `Bearer ${ADMIN}` } });
        expect(csv.status).toBe(200);
        expect(csv.headers.get("content-type")).toBe("text/csv; charset=utf-8");
        const lines = (await csv.text()).trim().split("\r\n");
        expect(lines[0]).toBe(
          "key,key_id,business_line,business_line_id,requests,input_tokens,cached_input_tokens,output_tokens,reasoning_tokens,cost_usd,saved_usd,errors,estimated_requests,cache_write_5m_tokens,cache_write_1h_tokens,cost_usd_exact",
        );
        expect(lines.slice(1).map((l) => l.split(",").slice(0, 5))).toEqual([
          ["report-a", idOf("report-a"), "insights", "insights", "3"],
          ["report-b", idOf("report-b"), "", "", "1"],
        ]);
        expect(lines[1]!.split(",")[9]).toBe((cost("report-a") / 1e6).toFixed(6));
        const bad = await fetch(csvUrl.replace(/start=[^&]+/, "start=yesterday"), { headers: { authorization: `Bearer ${ADMIN}` } });
        expect(bad.status).toBe(400);
      } finally {
        await h.close();
      }
    },
    DB_START_MS,
  );

  it("say the ledger is off rather than report nothing, when there is no database", async () => {
    const h = await startHarness({ env: { ADMIN }, auth: { adminKeyEnv: "ADMIN" } });
    try {
      const failure = adminClient(h.url, ADMIN).getSpendReport({ start: timestampFromMs(0), end: timestampFromMs(86_400_000) });
      await expect(failure).rejects.toMatchObject({ code: Code.FailedPrecondition, rawMessage: expect.stringContaining("the ledger") });
    } finally {
      await h.close();
    }
  });
});

/** Re-checks `condition` after each event-loop turn that lets I/O through, up to a deadline: for state held in another system (Redis, the database) that emits no event here. */
async function until(condition: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`condition not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
