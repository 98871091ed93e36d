import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminClient } from "./helpers/admin.js";
import { type Harness, startHarness } from "./helpers/harness.js";

/**
 * Issue #46, "Done when": two keys, every endpoint and every event — no id
 * one key was handed (a response's, an output or input item's, a
 * conversation's or its items') is usable by the other, which gets the
 * same 404 as for an id that never existed; and a key created later under
 * a revoked key's name is another tenant and sees nothing. Over the wire,
 * with the openai SDK's own methods, on the embedded database.
 */

const ADMIN_KEY = "sk-test-admin-ownership-7d1e4b9a2c6f3085";
/** The embedded PGlite takes seconds to start on a loaded machine (TOOLCHAIN). */
const DB_START_MS = 90_000;
let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    routing: (sim) => ({
      providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl } },
      models: { chat: { provider: "sim", model: "sim-1?tokens=4" }, slow: { provider: "sim", model: "sim-1?tokens=400&delay_ms=20" } },
    }),
    env: { SLUICE_ADMIN_KEY: ADMIN_KEY },
    auth: { adminKeyEnv: "SLUICE_ADMIN_KEY" },
    store: { postgres: {} },
  });
}, DB_START_MS + 20_000);
afterAll(async () => {
  await h?.close();
});

const admin = () => adminClient(h.url, ADMIN_KEY);
const sdk = (key: string) => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: key, maxRetries: 0 });

/** The status of a refused SDK call (and that it was refused). */
async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error.status ?? 0;
    throw error;
  }
  throw new Error("expected a refusal");
}

interface Owned {
  readonly responseId: string;
  readonly outputItemId: string;
  readonly inputItemId: string;
  readonly conversationId: string;
  readonly conversationItemId: string;
  readonly backgroundId: string;
  /** Every id the owner saw in the stream's events. */
  readonly eventIds: readonly string[];
}

/** What one key makes: a stored response (streamed, so every event's ids are collected), a conversation, a background run. */
async function make(key: string): Promise<Owned> {
  const client = sdk(key);
  const eventIds = new Set<string>();
  const stream = await client.responses.create({ model: "chat", input: "owned question", stream: true });
  let responseId = "";
  for await (const event of stream) {
    const e = event as unknown as { response?: { id: string }; item_id?: string; item?: { id?: string } };
    if (e.response?.id) eventIds.add((responseId = e.response.id));
    if (e.item_id) eventIds.add(e.item_id);
    if (e.item?.id) eventIds.add(e.item.id);
  }
  const stored = await client.responses.retrieve(responseId);
  const inputs = await client.responses.inputItems.list(responseId);
  const conversation = await client.conversations.create({ items: [{ type: "message", role: "user", content: "kept in a conversation" }] });
  const items = await client.conversations.items.list(conversation.id);
  const background = await client.responses.create({ model: "slow", input: "a long background run", background: true });
  return {
    responseId,
    outputItemId: stored.output[0]!.id!,
    inputItemId: inputs.data[0]!.id!,
    conversationId: conversation.id,
    conversationItemId: items.data[0]!.id!,
    backgroundId: background.id,
    eventIds: [...eventIds],
  };
}

/** Every way `key` could use `owned`'s ids: each must be the 404 an unknown id gets. */
async function refusals(key: string, owned: Owned): Promise<Record<string, number>> {
  const client = sdk(key);
  const out: Record<string, number> = {
    retrieve: await statusOf(client.responses.retrieve(owned.responseId)),
    inputItems: await statusOf(client.responses.inputItems.list(owned.responseId)),
    delete: await statusOf(client.responses.delete(owned.responseId)),
    cancel: await statusOf(client.responses.cancel(owned.backgroundId)),
    retrieveBackground: await statusOf(client.responses.retrieve(owned.backgroundId)),
    streamBackground: await statusOf(
      (async () => {
        for await (const _ of await client.responses.retrieve(owned.backgroundId, { stream: true, starting_after: 0 })) void _;
      })(),
    ),
    previousResponse: await statusOf(client.responses.create({ model: "chat", input: "continue", previous_response_id: owned.responseId })),
    itemReference: await statusOf(
      client.responses.create({
        model: "chat",
        input: [
          { type: "item_reference", id: owned.outputItemId },
          { role: "user", content: "go on" },
        ],
      }),
    ),
    inputItemReference: await statusOf(client.responses.create({ model: "chat", input: [{ type: "item_reference", id: owned.inputItemId }] })),
    conversationParam: await statusOf(client.responses.create({ model: "chat", input: "add to it", conversation: owned.conversationId })),
    conversationRetrieve: await statusOf(client.conversations.retrieve(owned.conversationId)),
    conversationUpdate: await statusOf(client.conversations.update(owned.conversationId, { metadata: { a: "b" } })),
    conversationItemsList: await statusOf(client.conversations.items.list(owned.conversationId)),
    conversationItemsCreate: await statusOf(client.conversations.items.create(owned.conversationId, { items: [{ type: "message", role: "user", content: "x" }] })),
    conversationItemRetrieve: await statusOf(client.conversations.items.retrieve(owned.conversationItemId, { conversation_id: owned.conversationId })),
    conversationItemDelete: await statusOf(client.conversations.items.delete(owned.conversationItemId, { conversation_id: owned.conversationId })),
    conversationDelete: await statusOf(client.conversations.delete(owned.conversationId)),
  };
  for (const id of owned.eventIds) {
    out[`event ${id.split("_")[0]} ${id === owned.responseId ? "response" : "item"}`] = id.startsWith("resp_")
      ? await statusOf(client.responses.retrieve(id))
      : await statusOf(client.responses.create({ model: "chat", input: [{ type: "item_reference", id }] }));
  }
  return out;
}

const every404 = (r: Record<string, number>) => Object.fromEntries(Object.keys(r).map((k) => [k, 404]));

describe("stored responses and conversations belong to the key id that made them", () => {
  it("another key gets 404 on every endpoint and for every id an event carried, and the owner's things are untouched", async () => {
    const a = await admin().createKey({ name: "owner-a" });
    const b = await admin().createKey({ name: "owner-b" });
    const owned = await make(a.key);
    const seen = await refusals(b.key, owned);
    expect(seen).toEqual(every404(seen));
    // The refusals changed nothing: the owner still reads, continues and cancels its own.
    const client = sdk(a.key);
    expect((await client.responses.retrieve(owned.responseId)).id).toBe(owned.responseId);
    expect((await client.conversations.items.list(owned.conversationId)).data).toHaveLength(1);
    const next = await client.responses.create({ model: "chat", input: "continue", previous_response_id: owned.responseId });
    expect(next.previous_response_id).toBe(owned.responseId);
    expect((await client.responses.cancel(owned.backgroundId)).status).toBe("cancelled");
  });

  it("a key created under a revoked key's name sees none of the old key's responses or conversations", async () => {
    const first = await admin().createKey({ name: "reused-responses" });
    const owned = await make(first.key);
    await sdk(first.key).responses.cancel(owned.backgroundId);
    await admin().revokeKey({ name: "reused-responses" });
    const again = await admin().createKey({ name: "reused-responses" });
    const seen = await refusals(again.key, owned);
    expect(seen).toEqual(every404(seen));
  });
});
