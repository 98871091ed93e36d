/**
 * The one SQL database of the features that need one (docs/caching.md,
 * "Where entries live"): a PostgreSQL server by URL (`pg`, shared by the
 * replicas) or the embedded PGlite. Both speak the same SQL, so every
 * statement is written once against this surface.
 */
export interface Database {
  /** `embedded` (PGlite) or `server` (a URL): for logs and stats only; the SQL is the same. */
  readonly kind: "embedded" | "server";
  query<Row extends Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<{ readonly rows: Row[] }>;
  /** Runs `work` on one connection inside a transaction (migrations: the lock, the DDL and the version row together). */
  transaction<T>(work: (query: Database["query"]) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * Set on every connection. pgvector's iterative index scan: without it an
 * HNSW search filtered by alias, scope and context looks at the nearest
 * `ef_search` rows of the whole table and may find none of its own
 * (pgvector 0.8; strict order keeps the nearest first).
 */
export const SESSION_SETTINGS = "SET hnsw.iterative_scan = strict_order";

/**
 * `work` in a transaction whose statements the database cancels past
 * `timeoutMs` (SET LOCAL statement_timeout): a write off the request path
 * (a cache entry, a ledger batch) or a report never holds a connection
 * for as long as a stuck server would let it.
 */
export function bounded<T>(db: Pick<Database, "transaction">, timeoutMs: number, work: (query: Database["query"]) => Promise<T>): Promise<T> {
  return db.transaction(async (query) => {
    await query(`SET LOCAL statement_timeout = ${Math.max(1, Math.round(timeoutMs))}`);
    return work(query);
  });
}
