import { GatewayError } from "../core/errors.js";
import { sealedBytes } from "../core/sealed-entry.js";
import { type JsonObject, placeOfItem } from "./response-ids.js";
import { limitOf, quotaRefusal, type StoredBytesLimit } from "./store-quota.js";
import type { ResponseStore, StoredResponse, StoredSummary } from "./stored-response.js";

interface Entry {
  readonly record: StoredResponse;
  readonly bytes: number;
  readonly expiresAt: number;
}

export interface MemoryResponseStoreOptions {
  /** Most bytes one owner may keep (0: no limit); a function is read at each put (the setting reloads live). */
  readonly maxStoredBytes: StoredBytesLimit;
  /** Most bytes kept in all (0: no limit): past it the oldest records go first, so the process's memory stays bounded whatever the keys do. */
  readonly maxTotalBytes?: number;
  readonly now?: () => number;
}

/**
 * Stored responses in this process: the same contract as the database's
 * (pg-response-store.ts). The gateway's store when no `store.postgres` is
 * configured, where the embedded database would be in memory too (and take
 * seconds to start on the first call), and the fast tests'. Nothing
 * survives a restart or is seen by another replica.
 */
export function createMemoryResponseStore(options: MemoryResponseStoreOptions): ResponseStore {
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  let total = 0;
  /** Bytes per owner, kept as records come and go: a put costs no scan of the others. */
  const owners = new Map<string, number>();
  const countOwner = (owner: string, delta: number) => {
    const left = (owners.get(owner) ?? 0) + delta;
    if (left === 0) owners.delete(owner);
    else owners.set(owner, left);
  };
  const remove = (id: string) => {
    const e = entries.get(id);
    if (!e) return;
    total -= e.bytes;
    countOwner(e.record.owner, -e.bytes);
    entries.delete(id);
  };
  const live = (id: string, owner: string): StoredResponse | undefined => {
    const e = entries.get(id);
    if (!e || e.record.owner !== owner || e.expiresAt <= now()) return undefined;
    return e.record;
  };
  /**
   * What `owner` keeps besides `except`. Expired records no longer count
   * (they are gone for every read): the counts hold them until the sweep,
   * so only an owner the counts put over its quota is looked at again.
   */
  const overQuota = (owner: string, except: string, bytes: number, limit: number): boolean => {
    const others = () => (owners.get(owner) ?? 0) - (entries.get(except)?.bytes ?? 0);
    if (others() + bytes <= limit) return false;
    for (const [id, e] of entries) if (e.record.owner === owner && id !== except && e.expiresAt <= now()) remove(id);
    return others() + bytes > limit;
  };
  return {
    async put(record, ttlMs) {
      // Counted as the database counts them: the size of the sealed record (seal-record.ts).
      const bytes = sealedBytes(Buffer.byteLength(JSON.stringify(record)));
      const existing = entries.get(record.id);
      if (existing && existing.record.owner !== record.owner) throw new GatewayError("internal", "response id already in use");
      const limit = limitOf(options.maxStoredBytes);
      if (limit > 0 && overQuota(record.owner, record.id, bytes, limit)) throw quotaRefusal(limit);
      remove(record.id);
      entries.set(record.id, { record, bytes, expiresAt: now() + ttlMs });
      total += bytes;
      countOwner(record.owner, bytes);
      const cap = options.maxTotalBytes ?? 0;
      // Oldest first: a Map iterates in insertion order, and a replaced record was inserted again.
      for (const id of entries.keys()) {
        if (cap === 0 || total <= cap || id === record.id) break;
        remove(id);
      }
    },
    async get(id, owner) {
      return live(id, owner);
    },
    async chain(id, owner, maxDepth) {
      const out: StoredResponse[] = [];
      let at: string | undefined = id;
      while (at !== undefined) {
        if (out.length >= maxDepth) return undefined;
        const r = live(at, owner);
        if (!r) return undefined;
        out.push(r);
        at = r.previousId;
      }
      return out.reverse();
    },
    async item(itemId, owner) {
      const place = placeOfItem(itemId);
      if (!place || place.kind === "conversation") return undefined;
      const r = live(place.responseId, owner);
      if (!r) return undefined;
      const list = place.kind === "input" ? r.input : ((r.response.output as JsonObject[] | undefined) ?? []);
      return list.find((i) => i.id === itemId);
    },
    async delete(id, owner) {
      if (!live(id, owner)) return false;
      remove(id);
      return true;
    },
    async purge(owner) {
      let n = 0;
      for (const [id, e] of entries) {
        if (e.record.owner === owner) {
          remove(id);
          n += 1;
        }
      }
      return n;
    },
    async summaries(owner) {
      const by = new Map<string, { count: number; bytes: number }>();
      for (const e of entries.values()) {
        if ((owner !== undefined && e.record.owner !== owner) || e.expiresAt <= now()) continue;
        const s = by.get(e.record.owner) ?? { count: 0, bytes: 0 };
        s.count += 1;
        s.bytes += e.bytes;
        by.set(e.record.owner, s);
      }
      return [...by].map(([o, s]): StoredSummary => ({ owner: o, ...s }));
    },
    async sweep() {
      let n = 0;
      for (const [id, e] of entries) {
        if (e.expiresAt <= now()) {
          remove(id);
          n += 1;
        }
      }
      return n;
    },
  };
}
