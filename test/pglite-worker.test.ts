import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../src/db/database.js";
import { createDatabaseHandle } from "../src/db/open-database.js";
import { openPgliteDatabase } from "../src/db/pglite-database.js";
import { crashEmbeddedWorkerOnNextCall } from "../src/db/pglite-thread.js";
import { openPgliteWorkerDatabase } from "../src/db/pglite-worker-database.js";
import { refusalCode } from "../src/drain/refusal.js";
import { capturedLogger } from "./helpers/captured-logger.js";

/**
 * The embedded database in its worker against the same database in the
 * gateway's thread: the same rows (types included), the same errors (the
 * SQLSTATE the writers branch on), transactions that cross the thread,
 * and a crashed worker replaced by the next call.
 */

const DB_START_MS = 90_000;

let inThread: Database;
let inWorker: Database;

beforeAll(async () => {
  [inThread, inWorker] = await Promise.all([openPgliteDatabase(undefined), openPgliteWorkerDatabase({ dataDir: undefined, prepare: async () => undefined, onLost: () => undefined })]);
}, DB_START_MS);
afterAll(async () => {
  await Promise.all([inThread?.close(), inWorker?.close()]);
});

const SETUP = [
  "CREATE EXTENSION IF NOT EXISTS vector",
  "CREATE TABLE t (id bigserial PRIMARY KEY, at timestamptz NOT NULL, n bigint, i integer, f double precision, num numeric, b bytea, j jsonb, arr text[], v vector, ok boolean, s text NOT NULL CHECK (s <> ''))",
];
const ROW = [new Date("2026-12-06T21:00:00.123Z"), "9007199254740993", 7, 1.5, "12.345", new Uint8Array([0, 1, 255]), { a: [1, "x"], nul: null }, ["p", "q"], "[0.25,-1,3]", true, "text"];
const INSERT = "INSERT INTO t (at, n, i, f, num, b, j, arr, v, ok, s) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *";

describe("the embedded database in a worker", () => {
  it("returns what the gateway's thread returns: dates, big integers, bytes, json, arrays and vectors", async () => {
    for (const db of [inThread, inWorker]) for (const sql of SETUP) await db.query(sql);
    const [a, b] = await Promise.all([inThread.query(INSERT, ROW), inWorker.query(INSERT, ROW)]);
    expect(b.rows).toEqual(a.rows);
    expect(b.rows[0]!.at).toBeInstanceOf(Date);
    expect(b.rows[0]!.b).toBeInstanceOf(Uint8Array);
    const select = "SELECT n, v <-> '[0,0,0]'::vector AS d, now() - at > interval '0' AS past FROM t";
    expect((await inWorker.query(select)).rows).toEqual((await inThread.query(select)).rows);
  });

  it("keeps a refused statement's SQLSTATE, so the writers still tell a bad record from an outage", async () => {
    const refused = await inWorker.query("INSERT INTO t (at, s) VALUES (now(), '')").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Error);
    expect(refusalCode(refused)).toBe("23514");
    expect(refused).toMatchObject({ code: "23514", message: expect.stringContaining("check constraint") });
  });

  it("runs a transaction's statements on its own connection, commits on resolve and rolls back on reject", async () => {
    await inWorker.query("CREATE TABLE tx (k text PRIMARY KEY)");
    // A statement outside the transaction waits for it, as PGlite's one connection makes it.
    let outsideSawInside: number | undefined;
    await inWorker.transaction(async (query) => {
      await query("INSERT INTO tx VALUES ('committed')");
      const outside = inWorker.query<{ n: number }>("SELECT count(*)::int AS n FROM tx").then((r) => (outsideSawInside = r.rows[0]!.n));
      expect((await query<{ n: number }>("SELECT count(*)::int AS n FROM tx")).rows[0]!.n).toBe(1);
      void outside;
    });
    const failed = await inWorker
      .transaction(async (query) => {
        await query("INSERT INTO tx VALUES ('rolled back')");
        throw new Error("work failed");
      })
      .catch((error: unknown) => error);
    expect(failed).toMatchObject({ message: "work failed" });
    expect((await inWorker.query<{ k: string }>("SELECT k FROM tx ORDER BY k")).rows).toEqual([{ k: "committed" }]);
    expect(outsideSawInside).toBe(1);
  });

  it(
    "replaces a crashed worker: the call in flight fails with store_unavailable, the next one runs on a migrated replacement",
    async () => {
      const { logger, lines } = capturedLogger();
      const handle = createDatabaseHandle(undefined, logger);
      try {
        const db = await handle.open();
        await db.query("INSERT INTO sluice_dead_letters (source, entry_id, code, payload) VALUES ('t', 'a', 'x', '\\x00')");
        crashEmbeddedWorkerOnNextCall();
        await expect(db.query("SELECT 1")).rejects.toMatchObject({ name: "GatewayError", code: "store_unavailable" });
        // In memory: the rows went with the worker; the schema is there again.
        expect((await db.query("SELECT count(*)::int AS n FROM sluice_dead_letters")).rows).toEqual([{ n: 0 }]);
        expect(lines.map((l) => l.event)).toEqual(expect.arrayContaining(["db.worker_lost", "db.replaced"]));
        expect(lines.find((l) => l.event === "db.worker_lost")).toMatchObject({ level: 50, lost: expect.stringContaining("in memory") });
      } finally {
        await handle.close();
      }
    },
    DB_START_MS,
  );

  it(
    "replaces a worker stuck past a call's deadline: the stuck call fails with store_unavailable, the next one is served",
    async () => {
      const lost: string[] = [];
      const db = await openPgliteWorkerDatabase({ dataDir: undefined, prepare: async () => undefined, onLost: (reason) => lost.push(reason), deadlineMs: 1_000 });
      try {
        await expect(db.query("SELECT pg_sleep(600)")).rejects.toMatchObject({ name: "GatewayError", code: "store_unavailable" });
        expect(lost).toEqual([expect.stringContaining("longer than 1000 ms")]);
        expect((await db.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
      } finally {
        await db.close();
      }
    },
    DB_START_MS,
  );

  it(
    "refuses work past its bound at once instead of queueing it",
    async () => {
      const db = await openPgliteWorkerDatabase({ dataDir: undefined, prepare: async () => undefined, onLost: () => undefined, maxQueued: 2 });
      try {
        const calls = [db.query("SELECT 1"), db.query("SELECT 2"), db.query("SELECT 3")];
        const settled = await Promise.allSettled(calls);
        expect(settled.map((s) => s.status)).toEqual(["fulfilled", "fulfilled", "rejected"]);
        expect((settled[2] as PromiseRejectedResult).reason).toMatchObject({ code: "overloaded" });
      } finally {
        await db.close();
      }
    },
    DB_START_MS,
  );
});
