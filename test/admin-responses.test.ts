import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../src/config/key-hash.js";
import type { Database } from "../src/db/database.js";
import { migrate } from "../src/db/migrations.js";
import { openPgDatabase } from "../src/db/pg-database.js";
import { createPgResponseStore } from "../src/response-state/pg-response-store.js";
import type { ResponseStore } from "../src/response-state/stored-response.js";
import { keyId } from "../src/tenancy/principal.js";
import { adminClient } from "./helpers/admin.js";
import { rpcFailure } from "./helpers/clients.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { LONG_TTL_MS, putChain } from "./helpers/response-store-contract.js";

/**
 * AdminService's stored-response calls over a real gateway on a real
 * PostgreSQL server. The responses are put by another store on the same
 * database (as another replica would), so the gateway lists and purges
 * what it shares with its replicas.
 */
const ADMIN_KEY = "sk-test-admin-5e7a9c1b3d2f4860";
const ALPHA_KEY = "sk-test-alpha-7c2e4a6b8d0f1357";
const ALPHA_ID = keyId(sha256Hex(ALPHA_KEY));

let h: Harness;
let own: OwnDatabase;
let db: Database;
let store: ResponseStore;

beforeAll(async () => {
  own = await ownDatabase();
  db = openPgDatabase(own.url, 2, () => undefined);
  await migrate(db);
  store = createPgResponseStore({ database: async () => db, maxStoredBytes: 0 });
  h = await startHarness({
    env: { ADMIN_KEY, ALPHA_KEY },
    auth: { adminKeyEnv: "ADMIN_KEY", keys: [{ name: "alpha", keyEnv: "ALPHA_KEY" }] },
    store: { postgres: { url: own.url, poolSize: 2 } },
    compliance: { audit: { flushMs: 60_000 } },
  });
});
afterAll(async () => {
  await h?.close();
  await db?.close();
  await own?.drop();
});

describe("AdminService: stored responses", () => {
  it("needs the admin key; a virtual key is not one", async () => {
    for (const client of [adminClient(h.url), adminClient(h.url, ALPHA_KEY)]) {
      expect((await rpcFailure(client.listStoredResponses({}))).code).toBe(Code.Unauthenticated);
      expect((await rpcFailure(client.purgeResponses({ keyId: ALPHA_ID }))).code).toBe(Code.Unauthenticated);
    }
    expect(await store.summaries(ALPHA_ID)).toEqual([]);
  });

  it("lists per key id with the current name, purges by name only the key bearing it now, and by id a revoked key's; each purge audited", async () => {
    const admin = adminClient(h.url, ADMIN_KEY);
    const old = (await admin.createKey({ name: "beta" })).info!.id;
    await admin.revokeKey({ name: "beta" });
    const current = (await admin.createKey({ name: "beta" })).info!.id;
    expect(current).not.toBe(old);
    await putChain(store, ALPHA_ID, 3);
    await putChain(store, old, 2);
    await putChain(store, current, 1, LONG_TTL_MS);

    const listed = await admin.listStoredResponses({});
    const rows = listed.keys.map((k) => [k.keyId, k.keyName, k.count]).sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    expect(rows).toEqual(
      [
        [ALPHA_ID, "alpha", 3n],
        [old, "", 2n],
        [current, "beta", 1n],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
    expect(listed.keys.every((k) => k.bytes > 0n)).toBe(true);
    expect((await admin.listStoredResponses({ keyId: old })).keys.map((k) => k.count)).toEqual([2n]);

    // By name: the key that bears it now, not the revoked one of the same name.
    expect(await admin.purgeResponses({ keyName: "beta" })).toMatchObject({ purged: 1n, keyIds: [current] });
    expect((await store.summaries(old)).map((s) => s.count)).toEqual([2]);
    // By id: the revoked key's, which no name reaches.
    expect(await admin.purgeResponses({ keyId: old })).toMatchObject({ purged: 2n, keyIds: [old] });
    expect((await admin.listStoredResponses({})).keys.map((k) => k.keyId)).toEqual([ALPHA_ID]);
    // A name no key bears purges nothing.
    expect(await admin.purgeResponses({ keyName: "nobody" })).toMatchObject({ purged: 0n, keyIds: [] });

    await h.sluice.audit!.flush();
    const { events } = await admin.listAuditEvents({ filter: { action: "responses.purge" }, pageSize: 100 });
    const byTarget = new Map(events.map((e) => [e.target, e]));
    expect(byTarget.get("beta")).toMatchObject({ outcome: "ok", details: { key: "beta", ids: current, purged: "1" } });
    expect(byTarget.get(old)).toMatchObject({ outcome: "ok", details: { ids: old, purged: "2" } });
    expect(byTarget.get("beta")?.actor?.id).toBe(keyId(sha256Hex(ADMIN_KEY)));
  });

  it("refuses a purge naming no key, or both an id and a name, and audits the failure", async () => {
    const admin = adminClient(h.url, ADMIN_KEY);
    expect((await rpcFailure(admin.purgeResponses({}))).code).toBe(Code.InvalidArgument);
    expect((await rpcFailure(admin.purgeResponses({ keyId: ALPHA_ID, keyName: "alpha" }))).code).toBe(Code.InvalidArgument);
    expect((await store.summaries(ALPHA_ID)).map((s) => s.count)).toEqual([3]);
    await h.sluice.audit!.flush();
    const { events } = await admin.listAuditEvents({ filter: { action: "responses.purge", outcome: "failed" }, pageSize: 100 });
    expect(events.length).toBeGreaterThanOrEqual(2);
  });

  it("takes a key's conversations with its responses, and only that key's", async () => {
    const admin = adminClient(h.url, ADMIN_KEY);
    const gamma = await admin.createKey({ name: "gamma" });
    const open = async (key: string) => {
      const response = await fetch(`${h.url}/v1/conversations`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ items: [{ type: "message", role: "user", content: "remember the lighthouse" }] }),
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { id: string }).id;
    };
    const read = (key: string, id: string) => fetch(`${h.url}/v1/conversations/${id}`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);
    const gammaKey = gamma.key;
    const theirs = await open(gammaKey);
    const alphas = await open(ALPHA_KEY);

    const result = await admin.purgeResponses({ keyName: "gamma" });
    expect(result).toMatchObject({ purged: 0n, conversationsPurged: 1n, keyIds: [gamma.info!.id] });
    expect(await read(gammaKey, theirs)).toBe(404);
    expect(await read(ALPHA_KEY, alphas)).toBe(200);
    await h.sluice.audit!.flush();
    const { events } = await admin.listAuditEvents({ filter: { action: "responses.purge" }, pageSize: 100 });
    expect(events.find((e) => e.target === "gamma")).toMatchObject({ outcome: "ok", details: { conversations: "1" } });
  });
});
