import { randomBytes } from "node:crypto";
import pg from "pg";

/** The PostgreSQL server tests use: the machine's, or the one .ci/run starts. */
export const SERVER_URL = process.env.SLUICE_TEST_POSTGRES_URL ?? "postgres://postgres:postgres@127.0.0.1:5432/postgres";

/** A database of one test's own on the server: its URL, and the drop that ends it (connections forced off). */
export interface OwnDatabase {
  readonly url: string;
  /** Runs one statement in it over a connection of its own (a test reaching past the gateway, as an attacker with database access would). */
  query(sql: string): Promise<void>;
  drop(): Promise<void>;
}

export async function ownDatabase(): Promise<OwnDatabase> {
  const name = `sluice_test_${randomBytes(6).toString("hex")}`;
  const server = new pg.Client({ connectionString: SERVER_URL });
  await server.connect();
  await server.query(`CREATE DATABASE ${name}`);
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async query(sql) {
      const own = new pg.Client({ connectionString: url.toString() });
      await own.connect();
      try {
        await own.query(sql);
      } finally {
        await own.end();
      }
    },
    async drop() {
      await server.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await server.end();
    },
  };
}
