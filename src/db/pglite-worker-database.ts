import { GatewayError } from "../core/errors.js";
import type { Database } from "./database.js";
import { type PgliteThread, startPgliteThread } from "./pglite-thread.js";

export interface PgliteWorkerOptions {
  /** PGlite's directory; in memory without (and then a crash loses every row: the replacement starts empty). */
  readonly dataDir: string | undefined;
  /**
   * Run on each worker once it is open, before any caller's statement:
   * the migrations. A replacement of an in-memory database starts empty
   * and needs its schema again; one on a `dataDir` finds it applied.
   */
  readonly prepare: (db: Database) => Promise<void>;
  /** A worker stopped (crashed, stuck past the deadline, or could not open): for the log. */
  readonly onLost: (reason: string) => void;
  /** A call's deadline (PGLITE_DEADLINE_MS); opening always has PGLITE_DEADLINE_MS. */
  readonly deadlineMs?: number;
  readonly maxQueued?: number;
}

/**
 * Longest one call (a statement, a transaction from BEGIN to COMMIT, the
 * open itself) may take before the worker is deemed stuck and replaced:
 * well past any statement the gateway issues (its own statement timeouts
 * are seconds; building an HNSW index over 100,000 rows takes about a
 * minute on the bench machine), so only a worker that no longer answers
 * reaches it.
 */
export const PGLITE_DEADLINE_MS = 120_000;

/**
 * Calls waiting at once (queries and transactions, not the statements
 * inside a transaction); past it a call is refused at once with
 * `overloaded` rather than queued behind minutes of work. The writers
 * (ledger, audit, recordings) keep what was refused and try again.
 */
export const PGLITE_MAX_QUEUED = 2_048;

/**
 * The embedded PGlite behind the `Database` surface, run in a worker
 * thread (pglite-worker.ts): the same SQL and migrations as in the
 * gateway's thread, and none of its work on that thread.
 *
 * Why `worker_threads` directly and not a pool such as piscina: a pool
 * hands each task to whichever worker is free, and its tasks are
 * stateless. PGlite is one stateful connection (the database lives in
 * that one worker's memory, a transaction is that connection's state
 * across several messages), so there is exactly one worker, addressed on
 * purpose, with a transaction id on the statements of a transaction; a
 * pool would add a queue and a hop and take none of this away.
 *
 * A worker that crashes or stops answering is replaced by the next call:
 * the same `dataDir` is opened again (PostgreSQL's crash recovery applies),
 * calls that were in flight reject with `store_unavailable`, and the
 * ledger's and the audit log's buffers write them again into the new one.
 * An in-memory database is lost with its worker.
 */
export async function openPgliteWorkerDatabase(options: PgliteWorkerOptions): Promise<Database> {
  const deadlineMs = options.deadlineMs ?? PGLITE_DEADLINE_MS;
  const maxQueued = options.maxQueued ?? PGLITE_MAX_QUEUED;
  let current: Promise<PgliteThread> | undefined;
  let closed = false;
  let queued = 0;

  const start = (): Promise<PgliteThread> => {
    const next: Promise<PgliteThread> = startPgliteThread(options.dataDir, { openMs: PGLITE_DEADLINE_MS, callMs: deadlineMs }, (reason) => {
      if (current === next) current = undefined;
      options.onLost(reason);
    }).then(async (thread) => {
      try {
        await options.prepare(surfaceOf(thread, deadlineMs));
        return thread;
      } catch (error) {
        await thread.close();
        throw error;
      }
    });
    next.catch(() => {
      if (current === next) current = undefined;
    });
    current = next;
    return next;
  };

  /** Admits one call past the bound, on the worker there is (or a new one); the count is held for the call's length. */
  const admitted = async <T>(run: (thread: PgliteThread) => Promise<T>): Promise<T> => {
    if (closed) throw new GatewayError("store_unavailable", "the embedded database is closed");
    if (queued >= maxQueued) throw new GatewayError("overloaded", "the embedded database has too much work waiting; retry shortly", { retryAfterMs: 1_000 });
    queued++;
    try {
      return await run(await (current ?? start()));
    } finally {
      queued--;
    }
  };

  await start();
  return {
    kind: "embedded",
    query: (sql, params) => admitted((thread) => surfaceOf(thread, deadlineMs).query(sql, params)),
    transaction: (work) => admitted((thread) => surfaceOf(thread, deadlineMs).transaction(work)),
    async close() {
      closed = true;
      await (await current?.catch(() => undefined))?.close();
    },
  };
}

/** The `Database` surface on one worker: a transaction begins there and its statements carry its id. */
function surfaceOf(thread: PgliteThread, deadlineMs: number): Database {
  return {
    kind: "embedded",
    query: async (sql, params) => ({ rows: (await thread.call({ op: "query", sql, params, tx: undefined })) as never[] }),
    async transaction(work) {
      const tx = (await thread.call({ op: "begin" })) as number;
      let ended = false;
      const end = (commit: boolean) => {
        ended = true;
        return thread.call({ op: "end", tx, commit });
      };
      // The whole database waits while a transaction is open: one that outlives the deadline is rolled back.
      const timer = setTimeout(() => {
        if (!ended) void end(false).catch(() => undefined);
      }, deadlineMs);
      try {
        const result = await work(async (sql, params) => {
          if (ended) throw new GatewayError("deadline_exceeded", "the transaction was rolled back: it took longer than the embedded database allows");
          return { rows: (await thread.call({ op: "query", sql, params, tx })) as never[] };
        });
        if (ended) throw new GatewayError("deadline_exceeded", "the transaction was rolled back: it took longer than the embedded database allows");
        await end(true);
        return result;
      } catch (error) {
        if (!ended) await end(false).catch(() => undefined);
        throw error;
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => thread.close(),
  };
}
