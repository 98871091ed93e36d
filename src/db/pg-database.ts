import pg from "pg";
import { type Database, SESSION_SETTINGS } from "./database.js";

/**
 * A PostgreSQL server by URL (with pgvector), through the `pg` pool: what
 * replicas share. Connection failures surface as query errors; callers
 * bound their waits (the cache's lookup deadline) and count them.
 */
export function openPgDatabase(url: string, poolSize: number, onError: (error: Error) => void): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    // Awaited before the new connection is handed out: issued from the "connect" event instead, the settings
    // ran beside the caller's first query on the same client, which pg deprecates (and warned about). A
    // failure is reported, not thrown: the connection works without them, as it did then.
    onConnect: async (client) => {
      await client.query(SESSION_SETTINGS).catch(onError);
    },
  });
  // An idle client's error (the server restarted) must not take the process down.
  pool.on("error", onError);
  return {
    kind: "server",
    async query(sql, params) {
      const result = await pool.query(sql, params as unknown[] | undefined);
      return { rows: result.rows as never[] };
    },
    async transaction(work) {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        const result = await work(async (sql, params) => ({ rows: (await client.query(sql, params as unknown[] | undefined)).rows as never[] }));
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}
