import OpenAI from "openai";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, type HarnessOptions, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";

/**
 * The Conversations API over the wire, with the openai SDK's own
 * `conversations` methods, against a real gateway whose conversations live
 * in the embedded PGlite; and `conversation` on POST /v1/responses, whose
 * turns are appended and seen by the next response. Two keys: no id of one
 * is usable by the other (the same 404 as an unknown id).
 */

const KEYS = { owner: "sk-test-conv-owner-3b8e1d5a9c2f7046", other: "sk-test-conv-other-6d2a9f4c1e7b3058" };
/** A fresh PGlite takes 10–16 s to start on a loaded machine (TOOLCHAIN). */
const DB_START_MS = 90_000;
const MARKER = "conversation-marker-4c1e9a7f";

const options = (extra: Partial<HarnessOptions> = {}): HarnessOptions => ({
  // echo=1: the model says the last text back, so a test knows each answer.
  models: { sim: "sim-1?echo=1" },
  env: { OWNER_KEY: KEYS.owner, OTHER_KEY: KEYS.other },
  auth: {
    keys: [
      { name: "owner", keyEnv: "OWNER_KEY" },
      { name: "other", keyEnv: "OTHER_KEY" },
    ],
  },
  ...extra,
});

const messageText = (item: unknown): string => ((item as { content?: Array<{ text?: string }> }).content ?? []).map((p) => p.text ?? "").join("");

/** The chat messages the simulator received for a tagged request (OpenAI wire). */
async function upstreamMessages(h: Harness, tag: string): Promise<Array<{ role: string; content: unknown }>> {
  const record = await h.sim.records.waitFor((r) => r.tag === tag && r.body !== undefined, 10_000);
  return (record.body as { messages: Array<{ role: string; content: unknown }> }).messages;
}

const flat = (content: unknown): string => (typeof content === "string" ? content : (content as Array<{ text?: string }>).map((p) => p.text ?? "").join(""));

describe("the Conversations API over the wire (embedded PGlite)", () => {
  let h: Harness;
  const client = (key: string) => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: key, maxRetries: 0 });

  beforeAll(async () => {
    h = await startHarness(options());
    // The first conversation call opens the database.
    await client(KEYS.owner).conversations.create();
  }, DB_START_MS + 20_000);
  afterAll(async () => h?.close());

  it("creates, retrieves, updates and deletes a conversation with the SDK's methods", async () => {
    const sdk = client(KEYS.owner);
    const created = await sdk.conversations.create({ metadata: { topic: "demo" }, items: [{ type: "message", role: "user", content: "hello there" }] });
    expect(created).toMatchObject({ object: "conversation", metadata: { topic: "demo" } });
    expect(created.id).toMatch(/^conv_[0-9a-f]{32}$/);
    expect(typeof created.created_at).toBe("number");
    expect(await sdk.conversations.retrieve(created.id)).toEqual(created);
    const updated = await sdk.conversations.update(created.id, { metadata: { topic: "changed" } });
    expect(updated.metadata).toEqual({ topic: "changed" });
    expect((await sdk.conversations.retrieve(created.id)).metadata).toEqual({ topic: "changed" });
    expect(await sdk.conversations.delete(created.id)).toEqual({ id: created.id, object: "conversation.deleted", deleted: true });
    await expect(sdk.conversations.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
  });

  it("adds, lists (paged, both orders), retrieves and deletes items with the SDK's methods", async () => {
    const sdk = client(KEYS.owner);
    const c = await sdk.conversations.create({ items: [{ type: "message", role: "user", content: "first" }] });
    const added = await sdk.conversations.items.create(c.id, {
      items: [
        { type: "message", role: "assistant", content: "second" },
        { type: "message", role: "user", content: [{ type: "input_text", text: "third" }] },
      ],
    });
    expect(added.object).toBe("list");
    expect(added.data).toHaveLength(2);
    expect(added.first_id).toBe(added.data[0]!.id);
    expect(added.data[0]).toMatchObject({ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "second" }] });

    const asc: string[] = [];
    for await (const item of sdk.conversations.items.list(c.id, { order: "asc", limit: 1 })) asc.push(messageText(item));
    expect(asc).toEqual(["first", "second", "third"]);
    const desc = await sdk.conversations.items.list(c.id);
    expect(desc.data.map(messageText)).toEqual(["third", "second", "first"]);
    expect(desc.has_more).toBe(false);

    const id = added.data[0]!.id!;
    expect(messageText(await sdk.conversations.items.retrieve(id, { conversation_id: c.id }))).toBe("second");
    const after = await sdk.conversations.items.delete(id, { conversation_id: c.id });
    expect(after).toMatchObject({ id: c.id, object: "conversation" });
    await expect(sdk.conversations.items.retrieve(id, { conversation_id: c.id })).rejects.toMatchObject({ status: 404 });
    expect((await sdk.conversations.items.list(c.id, { order: "asc" })).data.map(messageText)).toEqual(["first", "third"]);
  });

  it("refuses items the Responses edge would not take, naming them, and more than 20 at a time", async () => {
    const sdk = client(KEYS.owner);
    await expect(sdk.conversations.create({ items: [{ type: "item_reference", id: "msg_x" } as never] })).rejects.toMatchObject({ status: 400, param: "items[0]" });
    const c = await sdk.conversations.create();
    const many = Array.from({ length: 21 }, (_, i) => ({ type: "message" as const, role: "user" as const, content: `m${i}` }));
    await expect(sdk.conversations.items.create(c.id, { items: many })).rejects.toMatchObject({ status: 400, param: "items" });
    await expect(sdk.conversations.items.create(c.id, { items: [{ type: "message", role: "user", content: [{ type: "bogus" } as never] }] })).rejects.toMatchObject({
      status: 400,
      param: "items[0].content[0].type",
    });
    await expect(sdk.conversations.items.list(c.id, { limit: 101 })).rejects.toMatchObject({ status: 400, param: "limit" });
    // An id with a control character names nothing stored: refused before any query.
    const raw = await fetch(`${h.url}/v1/conversations/${c.id}/items/msg%00x`, { headers: { authorization: `Bearer ${KEYS.owner}` } });
    expect(raw.status).toBe(400);
    expect(((await raw.json()) as { error: { param: string } }).error.param).toBe("item_id");
  });

  it("a response with conversation starts from its items and appends its input and output; the next response sees the earlier turn", async () => {
    const sdk = client(KEYS.owner);
    const c = await sdk.conversations.create({ items: [{ type: "message", role: "developer", content: "be brief" }] });
    const first = await sdk.responses.create({ model: "sim", input: "#sim tag=conv-turn-1\nwhat is an apple", conversation: c.id });
    expect(first.output_text).toBe("what is an apple");
    expect(first.conversation).toEqual({ id: c.id });
    const items = await sdk.conversations.items.list(c.id, { order: "asc" });
    expect(items.data.map((i) => (i as { role?: string }).role)).toEqual(["developer", "user", "assistant"]);
    expect(messageText(items.data[2])).toBe("what is an apple");
    expect(items.data[2]!.id).toMatch(new RegExp(`^msg_${c.id.slice(5)}_c2$`));

    // Streamed, with the conversation as {id}: the items come before input, the answer is appended before the stream ends.
    const stream = await sdk.responses.create({ model: "sim", input: [{ role: "user", content: "#sim tag=conv-turn-2\nand a pear" }], conversation: { id: c.id }, stream: true });
    let completed = "";
    for await (const event of stream) if (event.type === "response.completed") completed = messageText(event.response.output[0]);
    expect(completed).toBe("and a pear");
    const sent = await upstreamMessages(h, "conv-turn-2");
    expect(sent.map((m) => m.role)).toEqual(["system", "user", "assistant", "user"]);
    expect(flat(sent[1]!.content)).toContain("what is an apple");
    expect(flat(sent[2]!.content)).toBe("what is an apple");
    const all = await sdk.conversations.items.list(c.id, { order: "asc" });
    expect(all.data.map(messageText).slice(3)).toEqual(["#sim tag=conv-turn-2\nand a pear", "and a pear"]);

    const third = await sdk.responses.create({ model: "sim", input: "#sim tag=conv-turn-3\nand a plum", conversation: c.id });
    expect(third.output_text).toBe("and a plum");
    expect((await upstreamMessages(h, "conv-turn-3")).map((m) => m.role)).toEqual(["system", "user", "assistant", "user", "assistant", "user"]);
  });

  it("an item_reference to a conversation's item is sent as that item; one the conversation no longer has is a 404 naming it", async () => {
    const sdk = client(KEYS.owner);
    const c = await sdk.conversations.create({ items: [{ type: "message", role: "user", content: "the password hint is tangerine" }] });
    const itemId = (await sdk.conversations.items.list(c.id)).data[0]!.id!;
    await sdk.responses.create({
      model: "sim",
      input: [
        { type: "item_reference", id: itemId },
        { role: "user", content: "#sim tag=conv-ref\nwhat is the hint?" },
      ],
    });
    const sent = await upstreamMessages(h, "conv-ref");
    expect(sent.map((m) => [m.role, flat(m.content)])).toEqual([
      ["user", "the password hint is tangerine"],
      ["user", "#sim tag=conv-ref\nwhat is the hint?"],
    ]);
    await sdk.conversations.items.delete(itemId, { conversation_id: c.id });
    await expect(sdk.responses.create({ model: "sim", input: [{ type: "item_reference", id: itemId }] })).rejects.toMatchObject({ status: 404, param: "input[0].id" });
  });

  it("refuses conversation with previous_response_id, and an unknown conversation with the API's 404", async () => {
    const sdk = client(KEYS.owner);
    const c = await sdk.conversations.create();
    await expect(sdk.responses.create({ model: "sim", input: "hi", conversation: c.id, previous_response_id: "resp_0" })).rejects.toMatchObject({ status: 400, param: "conversation" });
    await expect(sdk.responses.create({ model: "sim", input: "hi", conversation: "conv_00000000000000000000000000000000" })).rejects.toMatchObject({ status: 404, param: "conversation" });
  });

  it("another key gets the same 404 as an unknown id on every endpoint, and its calls change nothing", async () => {
    const mine = client(KEYS.owner);
    const theirs = client(KEYS.other);
    const c = await mine.conversations.create({ metadata: { who: "owner" }, items: [{ type: "message", role: "user", content: "secret words" }] });
    const itemId = (await mine.conversations.items.list(c.id)).data[0]!.id!;
    const unknown = "conv_0123456789abcdef0123456789abcdef";
    for (const id of [c.id, unknown]) {
      const attempts: Array<[string, () => Promise<unknown>]> = [
        ["retrieve", () => theirs.conversations.retrieve(id)],
        ["update", () => theirs.conversations.update(id, { metadata: { who: "other" } })],
        ["items.create", () => theirs.conversations.items.create(id, { items: [{ type: "message", role: "user", content: "injected" }] })],
        ["items.list", () => theirs.conversations.items.list(id)],
        ["items.retrieve", () => theirs.conversations.items.retrieve(itemId, { conversation_id: id })],
        ["items.delete", () => theirs.conversations.items.delete(itemId, { conversation_id: id })],
        ["responses.create", () => theirs.responses.create({ model: "sim", input: "hi", conversation: id })],
        ["item_reference", () => theirs.responses.create({ model: "sim", input: [{ type: "item_reference", id: itemId }], store: false })],
        ["delete", () => theirs.conversations.delete(id)],
      ];
      for (const [name, attempt] of attempts) {
        const status = await attempt().then(
          () => 200,
          (error: unknown) => (error as { status?: number }).status,
        );
        expect({ name, status }).toEqual({ name, status: 404 });
      }
    }
    expect(await mine.conversations.retrieve(c.id)).toMatchObject({ metadata: { who: "owner" } });
    expect((await mine.conversations.items.list(c.id)).data.map(messageText)).toEqual(["secret words"]);
  });
});

describe("conversations on a PostgreSQL server", () => {
  let h: Harness;
  let own: OwnDatabase;
  const client = () => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEYS.owner, maxRetries: 0 });

  beforeAll(async () => {
    own = await ownDatabase();
    h = await startHarness(options({ store: { postgres: { url: own.url, poolSize: 2 } } }));
  }, DB_START_MS);
  afterAll(async () => {
    await h?.close();
    await own?.drop();
  });

  it("keeps no prompt, answer, metadata or conversation id in plaintext", async () => {
    const sdk = client();
    const c = await sdk.conversations.create({ metadata: { note: MARKER }, items: [{ type: "message", role: "user", content: `${MARKER} created` }] });
    await sdk.responses.create({ model: "sim", input: `${MARKER} asked`, conversation: c.id });
    expect((await sdk.conversations.items.list(c.id)).data).toHaveLength(3);
    const db = new pg.Client({ connectionString: own.url });
    await db.connect();
    try {
      for (const table of ["sluice_conversations", "sluice_conversation_items"]) {
        const { rows } = await db.query<{ text: string }>(`SELECT t::text AS text FROM ${table} t`);
        expect(rows.length).toBeGreaterThan(0);
        for (const row of rows) {
          expect(row.text).not.toContain(MARKER);
          expect(row.text).not.toContain(c.id.slice(5));
        }
      }
    } finally {
      await db.end();
    }
  });
});
