/** Items checked against the database per query. */
const CHECK_BATCH = 500;

export interface HoldOptions<T> {
  /** Items held at most; past it the oldest is let go unconfirmed (it is still in Redis, only no longer guarded here), counted. */
  readonly max: number;
  readonly idOf: (item: T) => string;
  /** The ids among `ids` the database holds. */
  readonly present: (ids: readonly string[]) => Promise<ReadonlySet<string>>;
  /** Writes items the database does not hold (idempotently: the stream may still deliver them too). */
  readonly write: (items: readonly T[]) => Promise<void>;
  readonly now?: () => number;
}

export interface Hold<T> {
  /** Keeps a copy of an item just handed to Redis. */
  add(item: T): void;
  /**
   * Checks the items held for at least `minAgeMs`: those the database has
   * are let go, the others (Redis lost them) are written from here, then let
   * go. Resolves with how many were written; a failure (the database away)
   * keeps them all for the next time and is thrown.
   */
  settle(minAgeMs: number): Promise<number>;
  readonly size: number;
  /** Items let go unconfirmed because the hold was full, since start. */
  readonly overflowed: number;
}

/**
 * A replica's copies of what it handed to a Redis stream (usage records,
 * audit events), kept until it sees them in the database. A Redis that
 * restarts empty (no persistence, a failover to a replica that had not
 * caught up) loses the stream's unwritten entries; each replica then writes
 * its own from here, and the write being idempotent (rows keyed by the
 * record's id), one written both ways is one row. Bounded: memory, never
 * correctness in the ordinary case, is what a full hold gives up.
 */
export function createHold<T>(options: HoldOptions<T>): Hold<T> {
  const held = new Map<string, { readonly item: T; readonly at: number }>();
  const now = options.now ?? Date.now;
  let overflowed = 0;
  return {
    add(item) {
      const id = options.idOf(item);
      held.delete(id);
      held.set(id, { item, at: now() });
      if (held.size > options.max) {
        held.delete(held.keys().next().value!);
        overflowed++;
      }
    },
    async settle(minAgeMs) {
      const cutoff = now() - minAgeMs;
      const due: Array<[string, T]> = [];
      // Held in insertion order: the first one too young ends the due ones.
      for (const [id, entry] of held) {
        if (entry.at > cutoff) break;
        due.push([id, entry.item]);
      }
      let written = 0;
      for (let at = 0; at < due.length; at += CHECK_BATCH) {
        const batch = due.slice(at, at + CHECK_BATCH);
        const present = await options.present(batch.map(([id]) => id));
        const missing = batch.filter(([id]) => !present.has(id)).map(([, item]) => item);
        if (missing.length > 0) await options.write(missing);
        written += missing.length;
        for (const [id] of batch) held.delete(id);
      }
      return written;
    },
    get size() {
      return held.size;
    },
    get overflowed() {
      return overflowed;
    },
  };
}
