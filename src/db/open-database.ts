import type { PostgresStoreConfig } from "../config/settings.js";
import type { Logger } from "../logging/logger.js";
import type { Database } from "./database.js";
import { migrate } from "./migrations.js";
import { openPgDatabase } from "./pg-database.js";
import { openPgliteDatabase } from "./pglite-database.js";
import { openPgliteWorkerDatabase } from "./pglite-worker-database.js";

/**
 * The database as features see it while it opens: `current()` is
 * undefined until it is open and migrated, so a feature asking before then
 * goes without (the semantic cache: a miss) rather than wait. Opening
 * starts when a feature first needs it and never before the port listens.
 */
export interface DatabaseHandle {
  current(): Database | undefined;
  /** Starts opening (once); resolves when open, rejects if it could not be. */
  open(): Promise<Database>;
  close(): Promise<void>;
}

/** Where the URL is kept out of logs: only host, port and database name are shown. */
function describe(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || "5432"}${u.pathname}`;
}

/**
 * Where the embedded PGlite runs: in a worker thread (pglite-worker-database.ts),
 * unless the environment says `SLUICE_PGLITE_THREAD=gateway`. That switch is
 * kept for the bench's before/after of the semantic miss and of start-up
 * (bench/README.md), not as a setting: on the gateway's thread every
 * statement and the seconds of opening stall every stream.
 */
export function pgliteInWorker(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.SLUICE_PGLITE_THREAD !== "gateway";
}

export function createDatabaseHandle(config: PostgresStoreConfig | undefined, logger: Logger): DatabaseHandle {
  let db: Database | undefined;
  let opening: Promise<Database> | undefined;
  let closed = false;
  const open = async (): Promise<Database> => {
    const startedAt = performance.now();
    const where = config?.url ? describe(config.url) : config?.dataDir ? `pglite:${config.dataDir}` : "pglite:memory";
    const opened = config?.url ? openPgDatabase(config.url, config.poolSize, (error) => logger.warn({ event: "db.error", where, error: error.message })) : await openEmbedded(config?.dataDir, where, logger);
    try {
      const { applied, waiting } = await migrate(opened);
      if (closed) throw new Error("closed while opening");
      logger.info({ event: "db.ready", where, kind: opened.kind, migrations: applied, ms: Math.round(performance.now() - startedAt) });
      // The semantic cache needs pgvector; without it, its lookups fail and count as errors (misses), and the ledger works.
      if (waiting.length > 0) logger.warn({ event: "db.extension_missing", where, extensions: [...new Set(waiting.map((w) => w.requires))], waitingMigrations: waiting.map((w) => w.version) });
      db = opened;
      return opened;
    } catch (error) {
      await opened.close().catch(() => undefined);
      throw error;
    }
  };
  return {
    current: () => db,
    open() {
      opening ??= open().catch((error: unknown) => {
        logger.error({ event: "db.open_failed", error: error instanceof Error ? error.message : String(error) });
        opening = undefined;
        throw error;
      });
      return opening;
    },
    async close() {
      closed = true;
      const current = db;
      db = undefined;
      await (current ?? (await opening?.catch(() => undefined)))?.close();
    },
  };
}

/**
 * The embedded database; in its worker, each replacement of a lost worker
 * is migrated before it serves (an in-memory one starts empty), and the
 * first is migrated by `open` as a server is.
 */
async function openEmbedded(dataDir: string | undefined, where: string, logger: Logger): Promise<Database> {
  if (!pgliteInWorker()) return openPgliteDatabase(dataDir);
  let first = true;
  return openPgliteWorkerDatabase({
    dataDir,
    prepare: async (db) => {
      if (first) {
        first = false;
        return;
      }
      await migrate(db);
      logger.info({ event: "db.replaced", where });
    },
    onLost: (reason) => logger.error({ event: "db.worker_lost", where, reason, ...(dataDir === undefined ? { lost: "every row: the database was in memory" } : {}) }),
  });
}
