import { GatewayError } from "../core/errors.js";
import { bounded, type Database } from "../db/database.js";
import { type JsonObject, placeOfItem } from "./response-ids.js";
import { idDigest, sealRecord, unsealRecord } from "./seal-record.js";
import { limitOf, quotaRefusal, type StoredBytesLimit } from "./store-quota.js";
import type { ResponseStore, StoredResponse, StoredSummary } from "./stored-response.js";

export interface PgResponseStoreOptions {
  /** The database, opened on first use (open-database.ts). */
  readonly database: () => Promise<Database>;
  /** Most bytes one owner may keep, sealed (0: no limit); a function is read at each put (`responses.maxStoredPerKey` reloads live). */
  readonly maxStoredBytes: StoredBytesLimit;
}

/** Longest a write (a put with its quota check, a purge, a sweep batch) may hold a connection before the database cancels it. */
export const WRITE_TIMEOUT_MS = 5_000;
/** Rows one sweep statement removes: a sweep after a long pause deletes in bounded steps, not in one long transaction. */
export const SWEEP_BATCH = 1_000;

type Row = Record<string, unknown>;

/**
 * Stored responses in PostgreSQL (migration 17, table sluice_responses):
 * a row is keyed by the digest of the response's id and holds the record
 * sealed under that id and its owner's key id (seal-record.ts), so a dump
 * reads neither the id nor any prompt or answer. Every read names the
 * owner and the unexpired, so another key's response and an expired one
 * are the same "not found". Reads are one statement each, without a
 * transaction: `chain` is on the path of a `previous_response_id` turn.
 */
export function createPgResponseStore(options: PgResponseStoreOptions): ResponseStore {
  const { database } = options;
  const get = async (id: string, owner: string): Promise<StoredResponse | undefined> => {
    const db = await database();
    const { rows } = await db.query<{ body: string }>("SELECT body FROM sluice_responses WHERE id_hash = $1 AND owner = $2 AND expires_at > now()", [idDigest(id), owner]);
    const body = rows[0]?.body;
    return body === undefined ? undefined : unsealRecord<StoredResponse>(body, id, owner);
  };
  return {
    async put(record, ttlMs) {
      const db = await database();
      const body = sealRecord(record, record.id, record.owner);
      const bytes = Buffer.byteLength(body);
      const hash = idDigest(record.id);
      const limit = limitOf(options.maxStoredBytes);
      await bounded(db, WRITE_TIMEOUT_MS, async (query) => {
        // One owner's puts take turns (on every replica): two at once cannot both pass the quota on the same sum.
        await query("SELECT pg_advisory_xact_lock(hashtext('sluice_responses'), hashtext($1))", [record.owner]);
        if (limit > 0) {
          const { rows } = await query<{ n: string | null }>("SELECT sum(bytes) AS n FROM sluice_responses WHERE owner = $1 AND id_hash <> $2 AND expires_at > now()", [record.owner, hash]);
          if (Number(rows[0]?.n ?? 0) + bytes > limit) throw quotaRefusal(limit);
        }
        const { rows } = await query(
          `INSERT INTO sluice_responses (id_hash, owner, previous_hash, status, bytes, body, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, to_timestamp($7), now() + make_interval(secs => $8::double precision / 1000))
           ON CONFLICT (id_hash) DO UPDATE SET previous_hash = EXCLUDED.previous_hash, status = EXCLUDED.status, bytes = EXCLUDED.bytes,
             body = EXCLUDED.body, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
           WHERE sluice_responses.owner = EXCLUDED.owner
           RETURNING 1`,
          [hash, record.owner, record.previousId === undefined ? null : idDigest(record.previousId), record.status, bytes, body, record.createdAt, ttlMs],
        );
        // Another key's row under the same digest: 128 random bits never collide, so this is a bug, never a client's doing.
        if (rows.length === 0) throw new GatewayError("internal", "response id already in use");
      });
    },

    get,

    async chain(id, owner, maxDepth) {
      const db = await database();
      // One round trip: the rows of the chain, newest first, at most one past the depth (which tells "too long").
      const { rows } = await db.query<Row>(
        `WITH RECURSIVE walk (id_hash, previous_hash, body, depth) AS (
           SELECT id_hash, previous_hash, body, 1 FROM sluice_responses WHERE id_hash = $1 AND owner = $2 AND expires_at > now()
           UNION ALL
           SELECT r.id_hash, r.previous_hash, r.body, w.depth + 1 FROM sluice_responses r JOIN walk w ON r.id_hash = w.previous_hash
           WHERE r.owner = $2 AND r.expires_at > now() AND w.depth <= $3)
         SELECT id_hash, body FROM walk ORDER BY depth LIMIT $3 + 1`,
        [idDigest(id), owner, maxDepth],
      );
      // Each body names the id of the one before it, which unseals the next row: the walk needs the ids, the rows hold digests.
      const out: StoredResponse[] = [];
      let at: string | undefined = id;
      for (const row of rows) {
        if (at === undefined) break;
        if (out.length >= maxDepth || row.id_hash !== idDigest(at)) return undefined;
        const record: StoredResponse | undefined = unsealRecord<StoredResponse>(String(row.body), at, owner);
        if (!record) return undefined;
        out.push(record);
        at = record.previousId;
      }
      // A link missing (unknown, expired, deleted, another key's) or past the depth.
      if (at !== undefined) return undefined;
      return out.reverse();
    },

    async item(itemId, owner) {
      const place = placeOfItem(itemId);
      if (!place || place.kind === "conversation") return undefined;
      const r = await get(place.responseId, owner);
      if (!r) return undefined;
      const list = place.kind === "input" ? r.input : ((r.response.output as JsonObject[] | undefined) ?? []);
      return list.find((i) => i.id === itemId);
    },

    async delete(id, owner) {
      const db = await database();
      const { rows } = await db.query("DELETE FROM sluice_responses WHERE id_hash = $1 AND owner = $2 AND expires_at > now() RETURNING 1", [idDigest(id), owner]);
      return rows.length > 0;
    },

    async purge(owner) {
      const db = await database();
      const { rows } = await bounded(db, WRITE_TIMEOUT_MS, (query) => query<{ n: string }>("WITH gone AS (DELETE FROM sluice_responses WHERE owner = $1 RETURNING 1) SELECT count(*) AS n FROM gone", [owner]));
      return Number(rows[0]?.n ?? 0);
    },

    async summaries(owner) {
      const db = await database();
      const { rows } = await db.query<Row>("SELECT owner, count(*) AS count, sum(bytes) AS bytes FROM sluice_responses WHERE ($1::text IS NULL OR owner = $1) AND expires_at > now() GROUP BY owner ORDER BY owner", [owner ?? null]);
      return rows.map((r): StoredSummary => ({ owner: String(r.owner), count: Number(r.count), bytes: Number(r.bytes) }));
    },

    async sweep() {
      const db = await database();
      let total = 0;
      for (;;) {
        const { rows } = await bounded(db, WRITE_TIMEOUT_MS, (query) =>
          query<{ n: string }>(
            `WITH gone AS (DELETE FROM sluice_responses WHERE id_hash IN (SELECT id_hash FROM sluice_responses WHERE expires_at <= now() LIMIT ${SWEEP_BATCH}) RETURNING 1)
             SELECT count(*) AS n FROM gone`,
          ),
        );
        const n = Number(rows[0]?.n ?? 0);
        total += n;
        if (n < SWEEP_BATCH) return total;
      }
    },
  };
}
