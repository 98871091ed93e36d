import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Database } from "../src/db/database.js";
import { migrate } from "../src/db/migrations.js";
import { openPgDatabase } from "../src/db/pg-database.js";
import { openPgliteDatabase } from "../src/db/pglite-database.js";
import { createPgResponseStore } from "../src/response-state/pg-response-store.js";
import { idDigest } from "../src/response-state/seal-record.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { describeResponseStore, LONG_TTL_MS, owner, putChain, type StoreFixture, storedRecord } from "./helpers/response-store-contract.js";

/**
 * The database-backed store of stored responses, on the embedded PGlite
 * (one instance for the file: it takes seconds to start) and on a real
 * PostgreSQL server (a database of this file's own). Each test starts from
 * an empty table; time passes by moving every row's expiry back with the
 * test's own SQL, never by sleeping.
 */
function backend(name: string, open: () => Promise<{ db: Database; close: () => Promise<void> }>) {
  let db: Database;
  let close: () => Promise<void>;
  let current: StoreFixture;
  beforeAll(async () => {
    ({ db, close } = await open());
    await migrate(db);
  });
  afterAll(async () => {
    await close?.();
  });
  beforeEach(async () => {
    await db.query("DELETE FROM sluice_responses");
    let quota = 0;
    current = {
      store: createPgResponseStore({ database: async () => db, maxStoredBytes: () => quota }),
      setQuota: (bytes) => {
        quota = bytes;
      },
      elapse: async (ms) => {
        await db.query("UPDATE sluice_responses SET expires_at = expires_at - make_interval(secs => $1::double precision / 1000)", [ms]);
      },
    };
  });

  describeResponseStore(name, () => current);

  describe(`${name}: round trips`, () => {
    it("walks a 20-turn chain, and reads one response, in one statement each", async () => {
      const who = owner();
      const chain = await putChain(current.store, who, 20);
      const statements: string[] = [];
      const counted: Database = {
        ...db,
        query: (sql, params) => {
          statements.push(sql);
          return db.query(sql, params);
        },
        transaction: (work) => {
          statements.push("transaction");
          return db.transaction(work);
        },
      };
      const store = createPgResponseStore({ database: async () => counted, maxStoredBytes: 0 });
      expect((await store.chain(chain[19]!.id, who, 1_000))?.map((r) => r.id)).toEqual(chain.map((r) => r.id));
      expect(statements).toHaveLength(1);
      expect(await store.get(chain[3]!.id, who)).toEqual(chain[3]);
      expect(statements).toHaveLength(2);
    });
  });

  describe(`${name}: at rest`, () => {
    it("keeps no prompt, no answer and no response id in plaintext in any sluice_ table", async () => {
      const marker = `marker-${owner()}-plaintext`;
      const who = owner();
      const chain = await putChain(current.store, who, 2);
      const r = storedRecord(who, { previousId: chain[1]!.id, text: `the prompt and the answer say ${marker}` });
      await current.store.put(r, LONG_TTL_MS);
      expect((await current.store.get(r.id, who))?.response).toEqual(r.response);
      const { rows: columns } = await db.query<{ table_name: string; column_name: string }>(
        `SELECT table_name, column_name FROM information_schema.columns
         WHERE table_schema = current_schema() AND table_name LIKE 'sluice\\_%' AND data_type IN ('text', 'jsonb', 'json', 'character varying', 'bytea')`,
      );
      expect(columns.map((c) => `${c.table_name}.${c.column_name}`)).toContain("sluice_responses.body");
      const secrets = [marker, r.id, r.id.slice("resp_".length), chain[1]!.id.slice("resp_".length)];
      for (const { table_name, column_name } of columns) {
        for (const secret of secrets) {
          const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table_name} WHERE position($1 in "${column_name}"::text) > 0`, [secret]);
          expect(Number(rows[0]!.n), `${secret} in ${table_name}.${column_name}`).toBe(0);
        }
      }
      // What a row does say: the digest of its id and of the one before it, its owner, status and size.
      const { rows } = await db.query<{ owner: string; previous_hash: string; status: string }>("SELECT owner, previous_hash, status FROM sluice_responses WHERE id_hash = $1", [idDigest(r.id)]);
      expect(rows).toEqual([{ owner: who, previous_hash: idDigest(chain[1]!.id), status: "completed" }]);
    });

    it("reads nothing from a row sealed for another id or another owner (a row moved by someone with database access)", async () => {
      const [a, b] = [owner(), owner()];
      const mine = storedRecord(a);
      const other = storedRecord(a);
      await current.store.put(mine, LONG_TTL_MS);
      await current.store.put(other, LONG_TTL_MS);
      await db.query("UPDATE sluice_responses SET body = (SELECT body FROM sluice_responses WHERE id_hash = $2) WHERE id_hash = $1", [idDigest(mine.id), idDigest(other.id)]);
      expect(await current.store.get(mine.id, a)).toBeUndefined();
      await db.query("UPDATE sluice_responses SET owner = $2 WHERE id_hash = $1", [idDigest(other.id), b]);
      expect(await current.store.get(other.id, b)).toBeUndefined();
    });
  });
}

describe("on the embedded PGlite", () => {
  backend("PGlite", async () => {
    const db = await openPgliteDatabase(undefined);
    return { db, close: () => db.close() };
  });
});

describe("on a PostgreSQL server", () => {
  let own: OwnDatabase;
  backend("PostgreSQL", async () => {
    own = await ownDatabase();
    const db = openPgDatabase(own.url, 4, () => undefined);
    return {
      db,
      close: async () => {
        await db.close();
        await own.drop();
      },
    };
  });
});
