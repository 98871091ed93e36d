import type { Database } from "../db/database.js";
import { afterSeq, type ConversationStore, type KeepLimits, MAX_ITEMS_PER_CONVERSATION, quotaError, type StoredConversation, seqOf, tooManyItems, withItemId } from "./conversation-store.js";
import type { JsonObject } from "./response-ids.js";
import { idDigest, sealRecord, unsealRecord } from "./seal-record.js";

type Query = Database["query"];

/** What a conversation row's body seals. */
interface Body {
  readonly createdAt: number;
  readonly metadata: Readonly<Record<string, string>>;
}

/** What an item row seals: the item and its place, so a row moved to another place does not open there. */
interface SealedItem {
  readonly seq: number;
  readonly item: JsonObject;
}

/**
 * Conversations in the database (migration 18): one row per conversation
 * (its id's digest, owner, bytes, sealed metadata, expiry, next place) and
 * one per item, sealed under the conversation's id and owner
 * (seal-record.ts), so a dump reads no item and names no conversation.
 * Changes run in a transaction holding the owner's advisory lock: the
 * quota sum and the new rows are one step, and two appends to one
 * conversation take places one after the other. Times: created_at in
 * epoch seconds (as the API shows it), expires_at in epoch ms.
 */
export function createPgConversationStore(database: () => Promise<Database>, options: { readonly now?: () => number } = {}): ConversationStore {
  const now = options.now ?? Date.now;

  /** The live row of `id` for `owner`, locked when `lock`. */
  const row = async (query: Query, id: string, owner: string, lock = false) => {
    const { rows } = await query<{ body: string; bytes: string; next_seq: number }>(`SELECT body, bytes, next_seq FROM sluice_conversations WHERE id_hash = $1 AND owner = $2 AND expires_at > $3${lock ? " FOR UPDATE" : ""}`, [
      idDigest(id),
      owner,
      now(),
    ]);
    return rows[0];
  };
  const ownerBytes = async (query: Query, owner: string): Promise<number> => {
    const { rows } = await query<{ total: string | null }>("SELECT sum(bytes) AS total FROM sluice_conversations WHERE owner = $1 AND expires_at > $2", [owner, now()]);
    return Number(rows[0]?.total ?? 0);
  };
  const checkQuota = async (query: Query, owner: string, added: number, limits: KeepLimits, elsewhere: number) => {
    if (limits.maxStoredBytes > 0 && added > 0 && elsewhere + (await ownerBytes(query, owner)) + added > limits.maxStoredBytes) throw quotaError(limits.maxStoredBytes);
  };
  /**
   * `work` in a transaction holding `owner`'s lock, given what the owner
   * keeps elsewhere under the quota (read first: see KeepLimits.storedElsewhere).
   */
  const changing = async <T>(owner: string, limits: KeepLimits | undefined, work: (query: Query, elsewhere: number) => Promise<T>): Promise<T> => {
    const elsewhere = limits && limits.maxStoredBytes > 0 ? ((await limits.storedElsewhere?.(owner)) ?? 0) : 0;
    return (await database()).transaction(async (query) => {
      await query("SELECT pg_advisory_xact_lock(hashtext($1))", [`sluice_conversations:${owner}`]);
      return work(query, elsewhere);
    });
  };
  /** Seals and inserts `items` from place `from`; returns them with ids and the bytes they take. */
  const sealItems = (id: string, owner: string, from: number, items: readonly JsonObject[]) => {
    if (from + items.length > MAX_ITEMS_PER_CONVERSATION) throw tooManyItems();
    const placed = items.map((item, i) => withItemId(item, id, from + i));
    const sealed = placed.map((item, i) => sealRecord({ seq: from + i, item } satisfies SealedItem, id, owner));
    const bytes = sealed.reduce((n, s) => n + s.length, 0);
    return { placed, sealed, bytes };
  };
  const writeItems = async (query: Query, hash: string, from: number, sealed: readonly string[]) => {
    for (const [i, s] of sealed.entries()) {
      await query("INSERT INTO sluice_conversation_items (conversation, seq, item, bytes) VALUES ($1, $2, $3, $4)", [hash, from + i, s, s.length]);
    }
  };
  const unsealItem = (sealed: string, seq: number, id: string, owner: string): JsonObject | undefined => {
    const opened = unsealRecord<SealedItem>(sealed, id, owner);
    return opened && opened.seq === seq ? opened.item : undefined;
  };
  const conversationOf = (id: string, owner: string, body: string): StoredConversation | undefined => {
    const opened = unsealRecord<Body>(body, id, owner);
    return opened ? { id, owner, createdAt: opened.createdAt, metadata: opened.metadata } : undefined;
  };

  return {
    async create(conversation, items, limits) {
      const { id, owner } = conversation;
      return changing(owner, limits, async (query, elsewhere) => {
        const body = sealRecord({ createdAt: conversation.createdAt, metadata: conversation.metadata } satisfies Body, id, owner);
        const { placed, sealed, bytes } = sealItems(id, owner, 0, items);
        await checkQuota(query, owner, body.length + bytes, limits, elsewhere);
        const hash = idDigest(id);
        await query("INSERT INTO sluice_conversations (id_hash, owner, bytes, body, next_seq, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)", [
          hash,
          owner,
          body.length + bytes,
          body,
          placed.length,
          conversation.createdAt,
          now() + limits.ttlMs,
        ]);
        await writeItems(query, hash, 0, sealed);
        return placed;
      });
    },
    async get(id, owner) {
      const r = await row((await database()).query, id, owner);
      return r ? conversationOf(id, owner, r.body) : undefined;
    },
    async update(id, owner, metadata, limits) {
      return changing(owner, limits, async (query, elsewhere) => {
        const r = await row(query, id, owner, true);
        const current = r ? conversationOf(id, owner, r.body) : undefined;
        if (!r || !current) return undefined;
        const body = sealRecord({ createdAt: current.createdAt, metadata } satisfies Body, id, owner);
        await checkQuota(query, owner, body.length - r.body.length, limits, elsewhere);
        await query("UPDATE sluice_conversations SET body = $2, bytes = bytes + $3, expires_at = $4 WHERE id_hash = $1", [idDigest(id), body, body.length - r.body.length, now() + limits.ttlMs]);
        return { ...current, metadata };
      });
    },
    async delete(id, owner) {
      const { rows } = await (await database()).query("DELETE FROM sluice_conversations WHERE id_hash = $1 AND owner = $2 AND expires_at > $3 RETURNING 1 AS gone", [idDigest(id), owner, now()]);
      return rows.length > 0;
    },
    async append(id, owner, items, limits) {
      return changing(owner, limits, async (query, elsewhere) => {
        const r = await row(query, id, owner, true);
        if (!r) return undefined;
        const from = Number(r.next_seq);
        const { placed, sealed, bytes } = sealItems(id, owner, from, items);
        await checkQuota(query, owner, bytes, limits, elsewhere);
        const hash = idDigest(id);
        await writeItems(query, hash, from, sealed);
        await query("UPDATE sluice_conversations SET next_seq = $2, bytes = bytes + $3, expires_at = $4 WHERE id_hash = $1", [hash, from + placed.length, bytes, now() + limits.ttlMs]);
        return placed;
      });
    },
    async items(id, owner, page) {
      const db = await database();
      if (!(await row(db.query, id, owner))) return undefined;
      const after = afterSeq(page, id);
      const asc = page.order === "asc";
      const { rows } = await db.query<{ seq: number; item: string }>(`SELECT seq, item FROM sluice_conversation_items WHERE conversation = $1 AND seq ${asc ? ">" : "<"} $2 ORDER BY seq ${asc ? "ASC" : "DESC"} LIMIT $3`, [
        idDigest(id),
        after,
        page.limit + 1,
      ]);
      const items = rows.slice(0, page.limit).flatMap((r): JsonObject[] => {
        const item = unsealItem(r.item, Number(r.seq), id, owner);
        return item ? [item] : [];
      });
      return { items, hasMore: rows.length > page.limit };
    },
    async allItems(id, owner) {
      const db = await database();
      if (!(await row(db.query, id, owner))) return undefined;
      const { rows } = await db.query<{ seq: number; item: string }>("SELECT seq, item FROM sluice_conversation_items WHERE conversation = $1 ORDER BY seq", [idDigest(id)]);
      return rows.flatMap((r): JsonObject[] => {
        const item = unsealItem(r.item, Number(r.seq), id, owner);
        return item ? [item] : [];
      });
    },
    async item(id, owner, itemId) {
      const seq = seqOf(itemId, id);
      if (seq === undefined) return undefined;
      const db = await database();
      if (!(await row(db.query, id, owner))) return undefined;
      const { rows } = await db.query<{ item: string }>("SELECT item FROM sluice_conversation_items WHERE conversation = $1 AND seq = $2", [idDigest(id), seq]);
      return rows[0] ? unsealItem(rows[0].item, seq, id, owner) : undefined;
    },
    async deleteItem(id, owner, itemId, limits) {
      const seq = seqOf(itemId, id);
      if (seq === undefined) return false;
      return changing(owner, undefined, async (query) => {
        if (!(await row(query, id, owner, true))) return false;
        const hash = idDigest(id);
        const { rows } = await query<{ bytes: number }>("DELETE FROM sluice_conversation_items WHERE conversation = $1 AND seq = $2 RETURNING bytes", [hash, seq]);
        if (rows.length === 0) return false;
        await query("UPDATE sluice_conversations SET bytes = bytes - $2, expires_at = $3 WHERE id_hash = $1", [hash, Number(rows[0]!.bytes), now() + limits.ttlMs]);
        return true;
      });
    },
    async purge(owner) {
      const { rows } = await (await database()).query("DELETE FROM sluice_conversations WHERE owner = $1 RETURNING 1 AS gone", [owner]);
      return rows.length;
    },
    async sweep() {
      const { rows } = await (await database()).query("DELETE FROM sluice_conversations WHERE expires_at <= $1 RETURNING 1 AS gone", [now()]);
      return rows.length;
    },
  };
}
