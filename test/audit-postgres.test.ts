import { randomBytes, randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { buildAuditEvent } from "../src/audit/audit-event.js";
import { type AuditLog, createAuditLog } from "../src/audit/audit-log.js";
import { appendAudit, verifyAudit } from "../src/audit/audit-store.js";
import type { Database } from "../src/db/database.js";
import { migrate } from "../src/db/migrations.js";
import { openPgDatabase } from "../src/db/pg-database.js";
import { createLogger } from "../src/logging/logger.js";
import type { SluiceRedisClient } from "../src/store/redis-tenant-store.js";
import { dropPrefix, inspector, storeClient, testPrefix } from "./helpers/redis.js";

/**
 * The audit log on a real PostgreSQL server (the machine's, or the one
 * .ci/run starts) and the shared Redis: replicas are audit logs of their
 * own, each with its own connection pool, appending to one chain. Each
 * test has a database and a key prefix of its own, dropped afterwards.
 */
const SERVER_URL = process.env.SLUICE_TEST_POSTGRES_URL ?? "postgres://postgres:postgres@127.0.0.1:5432/postgres";
const SETTINGS = { maxBuffered: 10_000, flushMs: 60_000, batchSize: 7, timeoutMs: 10_000 };
const silent = createLogger("silent");

let server: pg.Client;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  server = new pg.Client({ connectionString: SERVER_URL });
  await server.connect();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await server?.end();
});

/** A migrated database of this test's own; `pool()` opens another replica's connection pool to it. */
async function freshDatabase() {
  const name = `sluice_test_${randomBytes(6).toString("hex")}`;
  await server.query(`CREATE DATABASE ${name}`);
  cleanups.push(() => server.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => undefined));
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  const pool = (): Database => {
    const db = openPgDatabase(url.toString(), 4, () => undefined);
    cleanups.push(() => db.close());
    return db;
  };
  const first = pool();
  await migrate(first);
  return { db: first, pool };
}

async function sharedRedis() {
  const prefix = testPrefix("audit");
  const client = await storeClient();
  cleanups.push(() => dropPrefix(prefix));
  cleanups.push(async () => client.disconnect());
  return { client, prefix };
}

function replica(name: string, db: Database, redis?: { client: SluiceRedisClient; prefix: string }): AuditLog {
  const log = createAuditLog({ database: async () => db, redis, settings: SETTINGS, logger: silent, replica: name });
  cleanups.push(() => log.close(1_000));
  log.start();
  return log;
}

/** `count` events on each log, taking turns, with ids the test keeps. */
function recordAlternately(logs: readonly AuditLog[], count: number): string[] {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    for (const [n, log] of logs.entries()) {
      const id = randomUUID();
      ids.push(id);
      log.record({ id, actor: { kind: "admin", id: `admin-${n}` }, action: "key.create", target: `key-${i}`, outcome: "ok", details: { i } });
    }
  }
  return ids;
}

async function chainOf(db: Database) {
  const rows = (await db.query<{ seq: string; id: string }>("SELECT seq, id::text AS id FROM sluice_audit ORDER BY seq")).rows;
  return { seqs: rows.map((r) => Number(r.seq)), ids: rows.map((r) => r.id) };
}

const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe("the audit log on a PostgreSQL server", () => {
  it("two replicas sharing Redis, recording at once, build one gapless chain that verifies", async () => {
    const { db, pool } = await freshDatabase();
    const redis = await sharedRedis();
    const a = replica("replica-a", db, redis);
    const b = replica("replica-b", pool(), redis);
    const ids = recordAlternately([a, b], 60);
    await Promise.all([a.flush(), b.flush()]);
    const chain = await chainOf(db);
    expect(chain.seqs).toEqual(upTo(120));
    expect([...chain.ids].sort()).toEqual([...ids].sort());
    expect(a.stats().written + b.stats().written).toBe(120);
    expect(a.stats().written).toBeGreaterThan(0);
    expect(b.stats().written).toBeGreaterThan(0);
    expect([a.stats().failures, b.stats().failures]).toEqual([0, 0]);
    expect(await verifyAudit(db, { pageSize: 50 })).toMatchObject({ ok: true, checked: 120, lastSeq: 120 });
    const look = await inspector();
    try {
      expect(await look.xLen(`${redis.prefix}audit`)).toBe(120);
      expect((await look.xPending(`${redis.prefix}audit`, "sluice-audit")).pending).toBe(0);
    } finally {
      look.destroy();
    }
  });

  it("two replicas without Redis, writing at once, take turns at the end of the chain", async () => {
    const { db, pool } = await freshDatabase();
    const a = replica("replica-a", db);
    const b = replica("replica-b", pool());
    const ids = recordAlternately([a, b], 50);
    await Promise.all([a.flush(), b.flush()]);
    const chain = await chainOf(db);
    expect(chain.seqs).toEqual(upTo(100));
    expect([...chain.ids].sort()).toEqual([...ids].sort());
    // Without the lock both would number on from the same last row, and one insert would fail.
    expect([a.stats().failures, b.stats().failures]).toEqual([0, 0]);
    expect(await a.verify()).toMatchObject({ ok: true, checked: 100 });
  });

  it("a batch appended twice, even at once from two replicas, is written once", async () => {
    const { db, pool } = await freshDatabase();
    const events = Array.from({ length: 10 }, (_, i) => buildAuditEvent({ actor: { kind: "system", id: "sluice" }, action: "config.reload", outcome: "ok", details: { i } }));
    expect(await appendAudit(db, events.slice(0, 4), 5_000)).toEqual({ written: 4, duplicates: 0, lastSeq: 4 });
    const [first, second] = await Promise.all([appendAudit(db, events, 5_000), appendAudit(pool(), events, 5_000)]);
    expect(first!.written + second!.written).toBe(6);
    expect(first!.duplicates + second!.duplicates).toBe(14);
    expect(await appendAudit(db, [...events, events[0]!], 5_000)).toEqual({ written: 0, duplicates: 11, lastSeq: 10 });
    expect((await chainOf(db)).ids).toEqual(events.map((e) => e.id));
    expect(await verifyAudit(db)).toMatchObject({ ok: true, checked: 10 });
  });

  it("reads back awkward text and numbers through the server's driver exactly as it hashed them", async () => {
    const { db } = await freshDatabase();
    const event = buildAuditEvent({
      at: 1_700_000_000_123,
      actor: { kind: "key", id: "ключ 😀", remote: "::ffff:10.0.0.1" },
      action: "pii.redact",
      target: "nul\u0000 and lone \uD83D surrogate",
      outcome: "ok",
      details: { "10": "after 2", "2": true, ratio: 0.1, big: 2 ** 60, tiny: 1e-7, negativeZero: -0, infinite: -Infinity },
    });
    await appendAudit(db, [event], 5_000);
    expect(await verifyAudit(db)).toMatchObject({ ok: true, checked: 1 });
    await db.query("DELETE FROM sluice_audit WHERE seq = 1");
    await appendAudit(db, [buildAuditEvent({ actor: { kind: "system", id: "sluice" }, action: "config.reload", outcome: "ok" })], 5_000);
    expect(await verifyAudit(db)).toMatchObject({ ok: false, firstBreak: { seq: 1, reason: "missing" } });
  });

  it("with Redis away, events wait in this replica and still reach the database", async () => {
    const { db } = await freshDatabase();
    const prefix = testPrefix("audit-away");
    const client = await storeClient();
    client.disconnect();
    const log = replica("replica-a", db, { client, prefix });
    const ids = recordAlternately([log], 15);
    await log.flush();
    expect(log.stats()).toMatchObject({ written: 15, buffered: 0, dropped: 0 });
    expect((await chainOf(db)).ids).toEqual(ids);
    expect(await log.verify()).toMatchObject({ ok: true, checked: 15 });
  });
});
