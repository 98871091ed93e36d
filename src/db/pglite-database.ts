import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { type Database, SESSION_SETTINGS } from "./database.js";

/**
 * PostgreSQL compiled to WebAssembly, in this process, with the real
 * pgvector extension: the default, so that one gateway needs no database
 * server. In memory unless `dataDir` is given. Opening takes seconds (WASM
 * start-up), which is why the database opens behind the port
 * (open-database.ts), never before it.
 */
export async function openPgliteDatabase(dataDir: string | undefined): Promise<Database> {
  const db = await PGlite.create({ ...(dataDir === undefined ? {} : { dataDir }), extensions: { vector } });
  await db.exec(SESSION_SETTINGS);
  const query: Database["query"] = async (sql, params) => {
    const result = await db.query<Record<string, unknown>>(sql, params as unknown[] | undefined);
    return { rows: result.rows as never[] };
  };
  return {
    kind: "embedded",
    query,
    // PGlite is one connection: a transaction is the whole database's for its length.
    transaction: (work) => db.transaction((tx) => work(async (sql, params) => ({ rows: (await tx.query<Record<string, unknown>>(sql, params as unknown[] | undefined)).rows as never[] }))),
    close: () => db.close(),
  };
}
