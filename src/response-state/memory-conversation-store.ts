import { afterSeq, type ConversationStore, type KeepLimits, MAX_ITEMS_PER_CONVERSATION, quotaError, type StoredConversation, seqOf, tooManyItems, withItemId } from "./conversation-store.js";
import type { JsonObject } from "./response-ids.js";

interface Entry {
  conversation: StoredConversation;
  metadataBytes: number;
  /** By place, in order of place (Map keeps insertion order, and places only grow). */
  readonly items: Map<number, { readonly item: JsonObject; readonly bytes: number }>;
  nextSeq: number;
  expiresAt: number;
  /** Its metadata's and items' bytes, kept as they change. */
  bytes: number;
}

export interface MemoryConversationStoreOptions {
  readonly now?: () => number;
  /** Most bytes kept in all (0: no limit): past it the conversations changed longest ago go first, so memory stays bounded whatever the keys do. */
  readonly maxTotalBytes?: number;
}

const bytesOf = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

/**
 * Conversations in this process: the same contract as the database's
 * (pg-conversation-store.ts). The gateway's store without `store.postgres`
 * (as for stored responses), and the fast tests'. Bytes are counted as
 * they change, per owner and in all, so a change costs no scan of the
 * others; only a change the counts say is over the owner's quota looks
 * again, without what has expired. Nothing survives a restart or is seen
 * by another replica.
 */
export function createMemoryConversationStore(options: MemoryConversationStoreOptions = {}): ConversationStore {
  const now = options.now ?? Date.now;
  /** In order of last change (a changed entry is inserted again): the first is the one to drop when memory is full. */
  const entries = new Map<string, Entry>();
  const owners = new Map<string, number>();
  let total = 0;
  const count = (e: Entry, delta: number) => {
    e.bytes += delta;
    total += delta;
    const owner = e.conversation.owner;
    const left = (owners.get(owner) ?? 0) + delta;
    if (left === 0) owners.delete(owner);
    else owners.set(owner, left);
  };
  const drop = (id: string) => {
    const e = entries.get(id);
    if (!e) return;
    count(e, -e.bytes);
    entries.delete(id);
  };
  /** `id` becomes the most recent, and the oldest others go while the total is over the bound. */
  const changed = (id: string, e: Entry) => {
    entries.delete(id);
    entries.set(id, e);
    const cap = options.maxTotalBytes ?? 0;
    for (const other of entries.keys()) {
      if (cap === 0 || total <= cap || other === id) break;
      drop(other);
    }
  };
  const live = (id: string, owner: string): Entry | undefined => {
    const e = entries.get(id);
    return e && e.conversation.owner === owner && e.expiresAt > now() ? e : undefined;
  };
  /** Drops what `owner` keeps that has expired: counted until the sweep, so a quota the counts say is passed is looked at again without it. */
  const dropExpired = (owner: string) => {
    for (const [id, e] of entries) if (e.conversation.owner === owner && e.expiresAt <= now()) drop(id);
  };
  const checkQuota = (owner: string, added: number, limits: KeepLimits, elsewhere: number) => {
    if (limits.maxStoredBytes <= 0 || added <= 0) return;
    const over = () => elsewhere + (owners.get(owner) ?? 0) + added > limits.maxStoredBytes;
    if (!over()) return;
    dropExpired(owner);
    if (over()) throw quotaError(limits.maxStoredBytes);
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
    for (const item of placed) {
      const bytes = bytesOf(item);
      e.items.set(e.nextSeq++, { item, bytes });
      count(e, bytes);
    }
    e.expiresAt = now() + limits.ttlMs;
    return placed;
  };
  return {
    async create(conversation, items, limits) {
      const elsewhere = await elsewhereOf(conversation.owner, limits);
      if (entries.has(conversation.id)) throw new Error("conversation id already in use");
      const metadataBytes = bytesOf(conversation.metadata);
      checkQuota(conversation.owner, metadataBytes, limits, elsewhere);
      const e: Entry = { conversation, metadataBytes: 0, items: new Map(), nextSeq: 0, expiresAt: now() + limits.ttlMs, bytes: 0 };
      const placed = place(e, items, limits, elsewhere + metadataBytes);
      e.metadataBytes = metadataBytes;
      count(e, metadataBytes);
      changed(conversation.id, e);
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
      count(e, metadataBytes - e.metadataBytes);
      e.metadataBytes = metadataBytes;
      e.expiresAt = now() + limits.ttlMs;
      changed(id, e);
      return e.conversation;
    },
    async delete(id, owner) {
      if (!live(id, owner)) return false;
      drop(id);
      return true;
    },
    async append(id, owner, items, limits) {
      const elsewhere = await elsewhereOf(owner, limits);
      const e = live(id, owner);
      if (!e) return undefined;
      const placed = place(e, items, limits, elsewhere);
      changed(id, e);
      return placed;
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
      const gone = seq === undefined ? undefined : e?.items.get(seq);
      if (!e || seq === undefined || !gone) return false;
      e.items.delete(seq);
      count(e, -gone.bytes);
      e.expiresAt = now() + limits.ttlMs;
      return true;
    },
    async purge(owner) {
      let n = 0;
      for (const [id, e] of entries) {
        if (e.conversation.owner !== owner) continue;
        drop(id);
        n += 1;
      }
      return n;
    },
    async sweep() {
      let n = 0;
      for (const [id, e] of entries) {
        if (e.expiresAt > now()) continue;
        drop(id);
        n += 1;
      }
      return n;
    },
  };
}
