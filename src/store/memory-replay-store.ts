import { MAX_REPLAY_KEY_CHARS, type ReplayEntry, type ReplayStore } from "./replay-store.js";

export interface MemoryReplayStoreOptions {
  /** Turns kept at most; the least recently stored go first. */
  readonly maxEntries: number;
  /** Approximate memory for all entries (UTF-16 string sizes); the oldest go first past it. */
  readonly maxBytes: number;
  /** How long a turn can be replayed after it was answered. */
  readonly ttlMs: number;
  /** Clock, for tests. */
  readonly now?: () => number;
}

/** Defaults: a conversation's tool turn is usually replayed within seconds; an hour leaves room for slow tools. */
export const DEFAULT_REPLAY_STORE: MemoryReplayStoreOptions = { maxEntries: 10_000, maxBytes: 64 * 1024 * 1024, ttlMs: 3_600_000 };

interface Slot {
  readonly ids: readonly string[];
  readonly entry: ReplayEntry;
  readonly bytes: number;
  readonly expiresAt: number;
}

function sizeOf(ids: readonly string[], entry: ReplayEntry): number {
  let chars = entry.provider.length + entry.model.length;
  for (const id of ids) chars += id.length * 2;
  for (const part of entry.reasoning) chars += part.text.length + (part.signature?.length ?? 0) + (part.redactedData?.length ?? 0);
  for (const [id, signature] of Object.entries(entry.toolSignatures)) chars += id.length + signature.length;
  return chars * 2 + 256;
}

/**
 * The in-process replay store: bounded in entries and bytes, entries expire
 * after `ttlMs`. One slot per turn, reachable from each of its tool-call
 * ids; an entry larger than a tenth of the budget is not kept (its turn then
 * cannot be replayed through the facade, and the provider says so).
 */
export function createMemoryReplayStore(options: MemoryReplayStoreOptions = DEFAULT_REPLAY_STORE): ReplayStore & { readonly size: number; readonly bytes: number } {
  const now = options.now ?? Date.now;
  /** Insertion order is age order: the first slot is the oldest. */
  const slots = new Set<Slot>();
  const byId = new Map<string, Slot>();
  let bytes = 0;

  const evict = (slot: Slot) => {
    if (!slots.delete(slot)) return;
    bytes -= slot.bytes;
    for (const id of slot.ids) if (byId.get(id) === slot) byId.delete(id);
  };

  return {
    get size() {
      return slots.size;
    },
    get bytes() {
      return bytes;
    },
    async put(ids, entry) {
      const keys = ids.filter((id) => id !== "" && id.length <= MAX_REPLAY_KEY_CHARS);
      if (keys.length === 0) return;
      const slot: Slot = { ids: keys, entry, bytes: sizeOf(keys, entry), expiresAt: now() + options.ttlMs };
      if (slot.bytes > options.maxBytes / 10) return;
      for (const id of keys) {
        const old = byId.get(id);
        if (old) evict(old);
      }
      slots.add(slot);
      for (const id of keys) byId.set(id, slot);
      bytes += slot.bytes;
      // Oldest first: expired slots, then whatever is over the limits.
      const at = now();
      for (const oldest of slots) {
        if (oldest.expiresAt > at && slots.size <= options.maxEntries && bytes <= options.maxBytes) break;
        evict(oldest);
      }
    },
    async get(id) {
      const slot = byId.get(id);
      if (!slot) return undefined;
      if (slot.expiresAt <= now()) {
        evict(slot);
        return undefined;
      }
      return slot.entry;
    },
  };
}
