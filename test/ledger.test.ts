import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPgDatabase } from "../src/db/pg-database.js";
import { migrate } from "../src/db/migrations.js";
import { createStreamDrain } from "../src/ledger/stream-drain.js";
import type { UsageRecord } from "../src/store/tenant-store.js";
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
  it("writes each record this replica settles once, with key, team and tags; while the database is away the records wait, then every one is written", async () => {
    const events = tenancyEvents();
    const h = await gateway({ store: { postgres: { url, poolSize: 2 } }, events });
    try {
      const before = await serve(h, events, 5);
      await h.sluice.ledger!.flush();
      const rows = await rowsOf(before.map((r) => r.requestId));
      expect(rows).toHaveLength(5);
      expect(rows[0]).toMatchObject({ key_name: "ledger-key", team: "finance", tags: { project: "atlas" } });
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
  }, DB_START_MS);
});

describe("the spend ledger with Redis", () => {
  const prefix = testPrefix("ledger");
  afterAll(async () => {
    await dropPrefix(prefix);
  });

  it("two replicas drain one usage stream into one ledger: every record once, through an outage of the database and a replica that died mid-batch", async () => {
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
      const orphaned = [...(await serve(a, events, 5, "zeus"))];
      void died.drainNow();
      await until(async () => (await redis.xPending(`${prefix}usage`, "sluice-ledger")).pending === orphaned.length);
      await died.close(0);
      // Nobody else may have them until they have been idle for claimIdleMs; then a live replica takes them over.
      await until(async () => {
        await b.sluice.ledger!.flush();
        return (await rowsOf(orphaned.map((r) => r.requestId))).length === orphaned.length;
      });
      expect(b.sluice.ledger!.stats().claimed).toBe(orphaned.length);
      expect((await redis.xPending(`${prefix}usage`, "sluice-ledger")).pending).toBe(0);
      redis.destroy();
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
  }, DB_START_MS);
});

/** Re-checks `condition` after each event-loop turn that lets I/O through, up to a deadline: for state held in another system (Redis, the database) that emits no event here. */
async function until(condition: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`condition not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
