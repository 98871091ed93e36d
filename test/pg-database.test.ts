import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPgDatabase } from "../src/db/pg-database.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";

/**
 * The `pg` pool on a real PostgreSQL server. Each new connection gets the
 * session settings before its first query, one query at a time: issuing
 * the settings beside the caller's query made pg warn "client.query() when
 * the client is already executing a query" (deprecated; pg 9 refuses it).
 */
let database: OwnDatabase;
beforeAll(async () => {
  database = await ownDatabase();
});
afterAll(async () => {
  await database?.drop();
});

describe("a PostgreSQL database by URL", () => {
  it("sets the session settings on every new connection before its first query, and never queues a query behind another on one connection", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on("warning", onWarning);
    const errors: Error[] = [];
    const db = openPgDatabase(database.url, 3, (error) => errors.push(error));
    try {
      // As many concurrent first queries as the pool has connections: each on a connection just opened.
      const settings = await Promise.all(Array.from({ length: 6 }, () => db.query<{ setting: string; pid: number }>("SELECT current_setting('hnsw.iterative_scan', true) AS setting, pg_backend_pid() AS pid")));
      expect(new Set(settings.map((r) => r.rows[0]!.pid)).size).toBeGreaterThan(1);
      expect(settings.map((r) => r.rows[0]!.setting)).toEqual(Array(6).fill("strict_order"));
      await db.transaction(async (query) => query("SELECT 1"));
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.includes("already executing a query"))).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      process.off("warning", onWarning);
      await db.close();
    }
  });
});
