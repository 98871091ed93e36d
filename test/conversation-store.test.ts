import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Database } from "../src/db/database.js";
import { migrate } from "../src/db/migrations.js";
import { openPgDatabase } from "../src/db/pg-database.js";
import { openPgliteDatabase } from "../src/db/pglite-database.js";
import type { ConversationStore, KeepLimits } from "../src/response-state/conversation-store.js";
import { createMemoryConversationStore } from "../src/response-state/memory-conversation-store.js";
import { createPgConversationStore } from "../src/response-state/pg-conversation-store.js";
import { newConversationId } from "../src/response-state/response-ids.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";

/**
 * The ConversationStore contract, the same on each place it lives: memory
 * (fast tests), the embedded PGlite and a PostgreSQL server. One clock the
 * tests move (no sleeps), one shared database per file.
 */

/** A fresh PGlite takes 10–16 s to start on a loaded machine (TOOLCHAIN). */
const DB_START_MS = 90_000;
const DAY = 86_400_000;
const LIMITS: KeepLimits = { ttlMs: DAY, maxStoredBytes: 0 };
const MARKER = "marker-prompt-7f3e1c9a";

interface Backing {
  readonly store: ConversationStore;
  readonly database?: Database;
  close(): Promise<void>;
}

let clock = Date.now();
const now = () => clock;

/** The database backings; memory runs the same contract without a table to scan. */
const DATABASES: ReadonlyArray<readonly [string, () => Promise<Backing & { readonly database: Database }>]> = [
  [
    "the embedded PGlite",
    async () => {
      const db = await openPgliteDatabase(undefined);
      await migrate(db);
      return { store: createPgConversationStore(async () => db, { now }), database: db, close: () => db.close() };
    },
  ],
  [
    "a PostgreSQL server",
    async () => {
      const own: OwnDatabase = await ownDatabase();
      const db = openPgDatabase(own.url, 4, () => undefined);
      await migrate(db);
      return {
        store: createPgConversationStore(async () => db, { now }),
        database: db,
        close: async () => {
          await db.close();
          await own.drop();
        },
      };
    },
  ],
];

const user = (text: string) => ({ type: "message", role: "user", content: [{ type: "input_text", text }] });
const conversation = (owner: string, metadata: Record<string, string> = {}) => ({ id: newConversationId(), owner, createdAt: Math.floor(clock / 1000), metadata });

/** The contract's tests over the store `backing()` gives once its suite has opened it. */
function contract(backing: () => Backing): void {
  let b: Backing;
  // Each: after the suite's beforeAll has opened the database.
  beforeEach(() => {
    b = backing();
  });

  it("creates a conversation with its first items, numbered in order, and reads it back only for its owner", async () => {
    const c = conversation("key-a", { topic: "t" });
    const placed = await b.store.create(c, [user("one"), user("two")], LIMITS);
    expect(placed.map((i) => i.id)).toEqual([`msg_${c.id.slice(5)}_c0`, `msg_${c.id.slice(5)}_c1`]);
    expect(await b.store.get(c.id, "key-a")).toEqual(c);
    expect(await b.store.get(c.id, "key-b")).toBeUndefined();
    expect(await b.store.allItems(c.id, "key-b")).toBeUndefined();
    expect(await b.store.append(c.id, "key-b", [user("x")], LIMITS)).toBeUndefined();
    expect(await b.store.update(c.id, "key-b", { a: "b" }, LIMITS)).toBeUndefined();
    expect(await b.store.item(c.id, "key-b", placed[0]!.id as string)).toBeUndefined();
    expect(await b.store.deleteItem(c.id, "key-b", placed[0]!.id as string, LIMITS)).toBe(false);
    expect(await b.store.delete(c.id, "key-b")).toBe(false);
    expect(await b.store.items(c.id, "key-b", { limit: 10, order: "asc" })).toBeUndefined();
    expect((await b.store.allItems(c.id, "key-a"))?.map((i) => (i.content as Array<{ text: string }>)[0]!.text)).toEqual(["one", "two"]);
  });

  it("appends after the last place, pages both ways with after and has_more, and never reuses a deleted item's place", async () => {
    const c = conversation("key-a");
    await b.store.create(c, [], LIMITS);
    const added = await b.store.append(c.id, "key-a", [user("1"), user("2"), user("3"), user("4"), user("5")], LIMITS);
    const ids = added!.map((i) => i.id as string);
    const asc = await b.store.items(c.id, "key-a", { limit: 2, order: "asc" });
    expect(asc?.items.map((i) => i.id)).toEqual(ids.slice(0, 2));
    expect(asc?.hasMore).toBe(true);
    const next = await b.store.items(c.id, "key-a", { limit: 2, order: "asc", after: ids[1]! });
    expect(next?.items.map((i) => i.id)).toEqual(ids.slice(2, 4));
    const last = await b.store.items(c.id, "key-a", { limit: 2, order: "asc", after: ids[3]! });
    expect(last).toEqual({ items: [added![4]], hasMore: false });
    const desc = await b.store.items(c.id, "key-a", { limit: 3, order: "desc" });
    expect(desc?.items.map((i) => i.id)).toEqual([ids[4], ids[3], ids[2]]);
    expect((await b.store.items(c.id, "key-a", { limit: 3, order: "desc", after: ids[2]! }))?.items.map((i) => i.id)).toEqual([ids[1], ids[0]]);
    expect(await b.store.item(c.id, "key-a", ids[2]!)).toEqual(added![2]);

    expect(await b.store.deleteItem(c.id, "key-a", ids[4]!, LIMITS)).toBe(true);
    expect(await b.store.deleteItem(c.id, "key-a", ids[4]!, LIMITS)).toBe(false);
    expect(await b.store.item(c.id, "key-a", ids[4]!)).toBeUndefined();
    const [again] = (await b.store.append(c.id, "key-a", [user("6")], LIMITS))!;
    expect(again!.id).toBe(`msg_${c.id.slice(5)}_c5`);
    await expect(b.store.items(c.id, "key-a", { limit: 2, order: "asc", after: "msg_00000000000000000000000000000000_c1" })).rejects.toMatchObject({ code: "invalid_request", field: "after" });
  });

  it("updates metadata, and deleting a conversation takes its items with it", async () => {
    const c = conversation("key-a", { v: "1" });
    const [item] = await b.store.create(c, [user("kept")], LIMITS);
    expect(await b.store.update(c.id, "key-a", { v: "2" }, LIMITS)).toEqual({ ...c, metadata: { v: "2" } });
    expect((await b.store.get(c.id, "key-a"))?.metadata).toEqual({ v: "2" });
    expect(await b.store.delete(c.id, "key-a")).toBe(true);
    expect(await b.store.get(c.id, "key-a")).toBeUndefined();
    expect(await b.store.item(c.id, "key-a", item!.id as string)).toBeUndefined();
    expect(await b.store.delete(c.id, "key-a")).toBe(false);
  });

  it("keeps a conversation ttl after its last change, then answers as if it never was, and the sweep removes it", async () => {
    const c = conversation("key-ttl");
    await b.store.create(c, [user("old")], LIMITS);
    clock += DAY - 1_000;
    await b.store.append(c.id, "key-ttl", [user("newer")], LIMITS);
    clock += DAY - 1_000;
    expect(await b.store.get(c.id, "key-ttl")).toBeDefined();
    clock += 2_000;
    expect(await b.store.get(c.id, "key-ttl")).toBeUndefined();
    expect(await b.store.append(c.id, "key-ttl", [user("late")], LIMITS)).toBeUndefined();
    expect(await b.store.sweep()).toBeGreaterThanOrEqual(1);
    expect(await b.store.purge("key-ttl")).toBe(0);
  });

  it("refuses a change past the key's quota, counting every conversation of the key and no other key's", async () => {
    const tight: KeepLimits = { ttlMs: DAY, maxStoredBytes: 4_000 };
    const c = conversation("key-quota");
    await b.store.create(c, [user("a".repeat(1_000))], tight);
    await b.store.create(conversation("key-quota"), [user("b".repeat(1_000))], tight);
    await expect(b.store.append(c.id, "key-quota", [user("c".repeat(2_000))], tight)).rejects.toMatchObject({ code: "failed_precondition" });
    await expect(b.store.create(conversation("key-quota"), [user("d".repeat(2_000))], tight)).rejects.toMatchObject({ code: "failed_precondition" });
    expect(await b.store.allItems(c.id, "key-quota")).toHaveLength(1);
    await b.store.create(conversation("key-other"), [user("e".repeat(2_000))], tight);
    expect(await b.store.purge("key-quota")).toBe(2);
    await b.store.append(c.id, "key-quota", [user("f")], tight).then((added) => expect(added).toBeUndefined());
    // What the key keeps elsewhere (its stored responses) counts against the same quota.
    const shared: KeepLimits = { ...tight, storedElsewhere: async (owner) => (owner === "key-shared" ? 3_500 : 0) };
    await expect(b.store.create(conversation("key-shared"), [user("g".repeat(600))], shared)).rejects.toMatchObject({ code: "failed_precondition" });
    expect(await b.store.create(conversation("key-unshared"), [user("g".repeat(600))], shared)).toHaveLength(1);
  });
}

describe("the conversation store in memory", () => {
  const b: Backing = { store: createMemoryConversationStore({ now }), close: async () => undefined };
  contract(() => b);
});

describe.each(DATABASES)("the conversation store in %s", (_name, open) => {
  let b: Backing & { readonly database: Database };
  beforeAll(async () => {
    b = await open();
  }, DB_START_MS);
  afterAll(async () => b?.close());
  contract(() => b);

  it("keeps no item text and no conversation id in plaintext", async () => {
    const c = conversation("key-plain", { note: MARKER });
    await b.store.create(c, [user(`${MARKER} first`)], LIMITS);
    await b.store.append(c.id, "key-plain", [user(`${MARKER} second`)], LIMITS);
    const db = b.database;
    for (const table of ["sluice_conversations", "sluice_conversation_items"]) {
      const { rows } = await db.query<{ text: string }>(`SELECT t::text AS text FROM ${table} t`);
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) {
        expect(row.text).not.toContain(MARKER);
        expect(row.text).not.toContain(c.id);
        expect(row.text).not.toContain(c.id.slice(5));
      }
    }
    expect((await b.store.allItems(c.id, "key-plain"))?.length).toBe(2);
  });
});
