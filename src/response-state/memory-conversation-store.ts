import { afterSeq, type ConversationStore, type KeepLimits, MAX_ITEMS_PER_CONVERSATION, quotaError, type StoredConversation, seqOf, tooManyItems, withItemId } from "./conversation-store.js";
import type { JsonObject } from "./response-ids.js";

interface Entry {
  conversation: StoredConversation;
  metadataBytes: number;
  /** By place, in order of place (Map keeps insertion order, and places only grow). */
  readonly items: Map<number, { readonly item: JsonObject; readonly bytes: number }>;
  nextSeq: number;
  expiresAt: number;
}

const bytesOf = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

/**
 * Conversations in this process: the same contract as the database's
 * (pg-conversation-store.ts), for fast tests of the edges over it. Nothing
 * survives a restart or is seen by another replica.
 */
export function createMemoryConversationStore(options: { readonly now?: () => number } = {}): ConversationStore {
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  const live = (id: string, owner: string): Entry | undefined => {
    const e = entries.get(id);
    return e && e.conversation.owner === owner && e.expiresAt > now() ? e : undefined;
  };
  const entryBytes = (e: Entry) => e.metadataBytes + [...e.items.values()].reduce((n, i) => n + i.bytes, 0);
  const ownerBytes = (owner: string) => {
    let total = 0;
    for (const e of entries.values()) if (e.conversation.owner === owner && e.expiresAt > now()) total += entryBytes(e);
    return total;
  };
  const checkQuota = (owner: string, added: number, limits: KeepLimits, elsewhere: number) => {
    if (limits.maxStoredBytes > 0 && added > 0 && elsewhere + ownerBytes(owner) + added > limits.maxStoredBytes) throw quotaError(limits.maxStoredBytes);
  };
  /** What `owner` keeps elsewhere under the quota, read before the change. */
  const elsewhereOf = async (owner: string, limits: KeepLimits) => (limits.maxStoredBytes > 0 ? ((await limits.storedElsewhere?.(owner)) ?? 0) : 0);
  const place = (e: Entry, items: readonly JsonObject[], limits: KeepLimits, elsewhere: number): JsonObject[] => {
    if (e.nextSeq + items.length > MAX_ITEMS_PER_CONVERSATION) throw tooManyItems();
    const placed = items.map((item, i) => withItemId(item, e.conversation.id, e.nextSeq + i));
    checkQuota(
      e.conversation.owner,
      placed.reduce((n, item) => n + bytesOf(item), 0),
      limits,
      elsewhere,
    );
    for (const item of placed) e.items.set(e.nextSeq++, { item, bytes: bytesOf(item) });
    e.expiresAt = now() + limits.ttlMs;
    return placed;
  };
  return {
    async create(conversation, items, limits) {
      const elsewhere = await elsewhereOf(conversation.owner, limits);
      if (entries.has(conversation.id)) throw new Error("conversation id already in use");
      const metadataBytes = bytesOf(conversation.metadata);
      checkQuota(conversation.owner, metadataBytes, limits, elsewhere);
      const e: Entry = { conversation, metadataBytes, items: new Map(), nextSeq: 0, expiresAt: now() + limits.ttlMs };
      const placed = place(e, items, limits, elsewhere);
      entries.set(conversation.id, e);
      return placed;
    },
    async get(id, owner) {
      return live(id, owner)?.conversation;
    },
    async update(id, owner, metadata, limits) {
      const elsewhere = await elsewhereOf(owner, limits);
      const e = live(id, owner);
      if (!e) return undefined;
      const metadataBytes = bytesOf(metadata);
      checkQuota(owner, metadataBytes - e.metadataBytes, limits, elsewhere);
      e.conversation = { ...e.conversation, metadata };
      e.metadataBytes = metadataBytes;
      e.expiresAt = now() + limits.ttlMs;
      return e.conversation;
    },
    async delete(id, owner) {
      if (!live(id, owner)) return false;
      entries.delete(id);
      return true;
    },
    async append(id, owner, items, limits) {
      const elsewhere = await elsewhereOf(owner, limits);
      const e = live(id, owner);
      return e ? place(e, items, limits, elsewhere) : undefined;
    },
    async items(id, owner, page) {
      const e = live(id, owner);
      if (!e) return undefined;
      const after = afterSeq(page, id);
      const seqs = [...e.items.keys()].filter((s) => (page.order === "asc" ? s > after : s < after));
      if (page.order === "desc") seqs.reverse();
      return { items: seqs.slice(0, page.limit).map((s) => e.items.get(s)!.item), hasMore: seqs.length > page.limit };
    },
    async allItems(id, owner) {
      const e = live(id, owner);
      return e ? [...e.items.values()].map((i) => i.item) : undefined;
    },
    async item(id, owner, itemId) {
      const seq = seqOf(itemId, id);
      return seq === undefined ? undefined : live(id, owner)?.items.get(seq)?.item;
    },
    async deleteItem(id, owner, itemId, limits) {
      const e = live(id, owner);
      const seq = seqOf(itemId, id);
      if (!e || seq === undefined || !e.items.delete(seq)) return false;
      e.expiresAt = now() + limits.ttlMs;
      return true;
    },
    async purge(owner) {
      let n = 0;
      for (const [id, e] of entries) {
        if (e.conversation.owner !== owner) continue;
        entries.delete(id);
        n += 1;
      }
      return n;
    },
    async sweep() {
      let n = 0;
      for (const [id, e] of entries) {
        if (e.expiresAt > now()) continue;
        entries.delete(id);
        n += 1;
      }
      return n;
    },
  };
}
