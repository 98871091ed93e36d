import { bounded, type Database } from "../db/database.js";

/** What one semantic entry is filed under: its alias, its scope, and the hash of everything but the question. */
export interface SemanticPlace {
  readonly alias: string;
  readonly scope: string;
  readonly context: string;
}

/**
 * Semantic-cache entries in PostgreSQL with pgvector: the question's
 * vector, the sealed answer, and where it belongs. The nearest entry of
 * the same alias, scope and context is found with an HNSW index on cosine
 * distance (one partial index per vector size), searched with pgvector's
 * iterative scan so that the filter cannot hide a near entry behind other
 * scopes' nearer ones. Every call needs the database open; until it is,
 * callers treat the cache as empty.
 */
export interface SemanticStore {
  nearest(place: SemanticPlace, vector: Float32Array): Promise<{ readonly answer: string; readonly similarity: number } | undefined>;
  /** Adds an entry, then trims the scope to `maxEntries` and drops expired entries, a bounded number per call. */
  insert(place: SemanticPlace, vector: Float32Array, entry: { readonly answer: string; readonly requestId: string; readonly ttlMs: number; readonly maxEntries: number }): Promise<void>;
  purge(aliases: readonly string[], scope?: string): Promise<number>;
  /** Removes the entry a request produced; resolves with 0 or 1. */
  purgeProducedBy(requestId: string): Promise<number>;
  size(alias: string): Promise<number>;
}

/** Rows removed per insert by trimming and expiry: the work an insert does stays bounded. */
export const TRIM_BATCH = 100;
/** Longest a cache write (the insert and its trims) may take in the database before it is cancelled there. */
export const WRITE_TIMEOUT_MS = 5_000;

/**
 * Inserts between two ANALYZEs of the table. With stale statistics the
 * planner takes the (alias, scope) index and sorts every row of the scope
 * by distance: measured at 5,000 entries, 28 ms a lookup, against 1.5 ms on
 * the HNSW index once analyzed. PGlite runs no autovacuum, so the store
 * refreshes them itself (on a server autovacuum would too, later).
 */
export const ANALYZE_EVERY = 1_000;

const literal = (vector: Float32Array) => `[${Array.from(vector).join(",")}]`;

/** The vector size as SQL text; checked to be an integer, since it is written into the statement (a cast needs a literal). */
function dimsOf(vector: Float32Array): number {
  const dims = vector.length;
  if (!Number.isInteger(dims) || dims < 1 || dims > 16_000) throw new Error(`vector of ${dims} dimensions cannot be indexed`);
  return dims;
}

export function createSemanticStore(database: () => Database | undefined): SemanticStore {
  const indexed = new Map<number, Promise<void>>();
  let inserts = 0;
  let analyzing = false;
  const need = (): Database => {
    const db = database();
    if (!db) throw new Error("the database is not open yet");
    return db;
  };
  /** The partial HNSW index for one vector size, made once per process (IF NOT EXISTS across replicas). */
  const ensureIndex = (db: Database, dims: number): Promise<void> => {
    let ready = indexed.get(dims);
    if (!ready) {
      ready = db.query(`CREATE INDEX IF NOT EXISTS sluice_semantic_cache_hnsw_${dims} ON sluice_semantic_cache USING hnsw ((embedding::vector(${dims})) vector_cosine_ops) WHERE dims = ${dims}`).then(() => undefined);
      ready.catch(() => indexed.delete(dims));
      indexed.set(dims, ready);
    }
    return ready;
  };

  return {
    async nearest(place, vector) {
      const db = need();
      const dims = dimsOf(vector);
      await ensureIndex(db, dims);
      const { rows } = await db.query<{ answer: string; similarity: number }>(
        `SELECT answer, 1 - (embedding::vector(${dims}) <=> $1::vector(${dims})) AS similarity FROM sluice_semantic_cache
         WHERE dims = ${dims} AND alias = $2 AND scope = $3 AND context = $4 AND expires_at > now()
         ORDER BY embedding::vector(${dims}) <=> $1::vector(${dims}) LIMIT 1`,
        [literal(vector), place.alias, place.scope, place.context],
      );
      const row = rows[0];
      return row ? { answer: row.answer, similarity: Number(row.similarity) } : undefined;
    },

    async insert(place, vector, entry) {
      const db = need();
      const dims = dimsOf(vector);
      await ensureIndex(db, dims);
      // One statement in one bounded transaction: a stuck server cancels the write (the entry is simply not stored) instead of holding a connection.
      // Its parts see the table as it was before the insert, so the trim keeps maxEntries - 1 older rows beside the new one.
      await bounded(db, WRITE_TIMEOUT_MS, (query) =>
        query(
          `WITH added AS (
             INSERT INTO sluice_semantic_cache (alias, scope, context, dims, embedding, answer, request_id, expires_at)
             VALUES ($1, $2, $3, ${dims}, $4::vector, $5, $6, now() + make_interval(secs => $7::double precision / 1000)) RETURNING 1),
           trimmed AS (
             DELETE FROM sluice_semantic_cache WHERE id IN (
               SELECT id FROM sluice_semantic_cache WHERE alias = $1 AND scope = $2 ORDER BY id DESC OFFSET greatest($8::int - 1, 0) LIMIT ${TRIM_BATCH})),
           expired AS (
             DELETE FROM sluice_semantic_cache WHERE id IN (SELECT id FROM sluice_semantic_cache WHERE expires_at <= now() LIMIT ${TRIM_BATCH}))
           SELECT count(*) FROM added`,
          [place.alias, place.scope, place.context, literal(vector), entry.answer, entry.requestId, entry.ttlMs, entry.maxEntries],
        ),
      );
      if (++inserts % ANALYZE_EVERY === 1 && !analyzing) {
        analyzing = true;
        void db
          .query("ANALYZE sluice_semantic_cache")
          .catch(() => undefined)
          .finally(() => (analyzing = false));
      }
    },

    async purge(aliases, scope) {
      const db = need();
      const { rows } = await db.query<{ n: string }>(`WITH gone AS (DELETE FROM sluice_semantic_cache WHERE alias = ANY($1::text[]) AND ($2::text IS NULL OR scope = $2) RETURNING 1) SELECT count(*) AS n FROM gone`, [
        aliases,
        scope ?? null,
      ]);
      return Number(rows[0]?.n ?? 0);
    },

    async purgeProducedBy(requestId) {
      const { rows } = await need().query<{ n: string }>("WITH gone AS (DELETE FROM sluice_semantic_cache WHERE request_id = $1 RETURNING 1) SELECT count(*) AS n FROM gone", [requestId]);
      return Number(rows[0]?.n ?? 0);
    },

    async size(alias) {
      const db = database();
      if (!db) return 0;
      const { rows } = await db.query<{ n: string }>("SELECT count(*) AS n FROM sluice_semantic_cache WHERE alias = $1", [alias]);
      return Number(rows[0]?.n ?? 0);
    },
  };
}
