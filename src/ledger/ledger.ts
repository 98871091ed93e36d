import type { Meter } from "@opentelemetry/api";
import type { LedgerSettings } from "../config/config.js";
import type { Database } from "../db/database.js";
import { causeOf } from "../drain/batch-writer.js";
import type { TenancyObserver } from "../flow/observer.js";
import type { Logger } from "../logging/logger.js";
import type { Tenancy } from "../tenancy/tenancy.js";
import { createBufferedLedger } from "./buffered-ledger.js";
import { addRefusals, expireRows, type RefusalCount } from "./ledger-rows.js";
import type { LedgerEvent } from "./ledger-events.js";
import { createStreamDrain } from "./stream-drain.js";

export interface LedgerOptions {
  readonly settings: LedgerSettings;
  /** The shared store's Redis, when there is one: the ledger then drains its usage stream. */
  readonly redis?: Tenancy["redis"];
  /** Opens the database when first called (behind the port); resolves once it is open and migrated. */
  readonly database: () => Promise<Database>;
  readonly replica: string;
  readonly logger: Logger;
  readonly meter?: Meter;
}

/** Totals since start, for tests and the logs. */
export interface LedgerStats {
  readonly written: number;
  readonly duplicates: number;
  readonly dropped: number;
  readonly claimed: number;
  readonly failures: number;
}

export interface Ledger {
  /** Hears this replica's settled records; used only without Redis (with it the usage stream carries them). */
  readonly observer: TenancyObserver;
  /** Starts writing; called once the port listens, so opening an embedded database never delays it. */
  start(): void;
  readonly stats: () => LedgerStats;
  /** Without waiting for the next interval: what is there now is written (tests; shutdown). */
  flush(): Promise<void>;
  close(graceMs: number): Promise<void>;
}

const HOUR_MS = 3_600_000;
/** Distinct (day, key, level, reason) counts held between writes at most; past it refusals are only in the metrics. */
const MAX_REFUSAL_COUNTS = 10_000;
/** Drops are logged at the first and then every LOG_DROPS_EVERY-th, with the running total. */
const LOG_DROPS_EVERY = 1_000;

/**
 * The durable spend ledger (docs/tenancy.md, "The spend ledger"): one
 * row per charged call in store.postgres, written exactly once, off the
 * request path. With Redis, every replica drains the usage stream through
 * one consumer group (stream-drain.ts); without it, this replica writes its
 * own records from a bounded buffer (buffered-ledger.ts). Rows past the
 * retention are removed hourly.
 */
export function createLedger(options: LedgerOptions): Ledger {
  const { settings, logger } = options;
  const totals = { written: 0, duplicates: 0, dropped: 0, claimed: 0, failures: 0 };
  const rows = options.meter?.createCounter("sluice.ledger.rows", { unit: "{row}", description: "Ledger rows by result: written, or duplicate (written before: a batch written twice)." });
  const dropped = options.meter?.createCounter("sluice.ledger.dropped", { unit: "{record}", description: "Records that never reached the ledger: a full buffer, or usage-stream entries trimmed before any replica wrote them." });
  const failures = options.meter?.createCounter("sluice.ledger.failures", { unit: "{batch}", description: "Batches that could not be written and wait to be tried again." });
  let failing = false;

  const onEvent = (event: LedgerEvent) => {
    switch (event.type) {
      case "written":
        totals.written += event.written;
        totals.duplicates += event.duplicates;
        rows?.add(event.written, { "sluice.ledger.result": "written" });
        if (event.duplicates > 0) rows?.add(event.duplicates, { "sluice.ledger.result": "duplicate" });
        break;
      case "failed":
        totals.failures++;
        failures?.add(1);
        // One line per run of failures: the database being away for a minute is one event.
        if (!failing) logger.warn({ event: "ledger.write_failed", cause: event.cause, ...(event.waiting >= 0 ? { waiting: event.waiting } : {}) });
        failing = true;
        break;
      case "recovered":
        failing = false;
        logger.info({ event: "ledger.recovered" });
        break;
      case "dropped":
        totals.dropped += event.count;
        dropped?.add(event.count);
        if (event.total === event.count || Math.floor(event.total / LOG_DROPS_EVERY) > Math.floor((event.total - event.count) / LOG_DROPS_EVERY)) {
          logger.error({ event: "ledger.dropped", records: event.count, droppedTotal: event.total });
        }
        break;
      case "claimed":
        totals.claimed += event.count;
        logger.info({ event: "ledger.claimed", records: event.count });
        break;
      case "expired":
        logger.info({ event: "ledger.expired", rows: event.count });
        break;
    }
  };

  const redis = options.redis;
  let drain: ReturnType<typeof createStreamDrain> | undefined;
  const buffered = redis
    ? undefined
    : createBufferedLedger({ database: options.database, bufferMax: settings.bufferMax, batchSize: settings.batchSize, flushMs: settings.flushMs, onEvent });
  let retention: NodeJS.Timeout | undefined;
  let refusalTimer: NodeJS.Timeout | undefined;
  let refusals = new Map<string, RefusalCount>();

  const countRefusal = (keyId: string, key: string, level: string, reason: string) => {
    const day = new Date().toISOString().slice(0, 10);
    const id = `${day}\u0000${keyId}\u0000${key}\u0000${level}\u0000${reason}`;
    const known = refusals.get(id);
    if (known) refusals.set(id, { ...known, count: known.count + 1 });
    else if (refusals.size < MAX_REFUSAL_COUNTS) refusals.set(id, { day, key, keyId, level, reason, count: 1 });
  };

  /** This replica's refusal counts since the last write, added to its rows; kept for the next try when the database is away. */
  const writeRefusals = async () => {
    if (refusals.size === 0) return;
    const pending = refusals;
    refusals = new Map();
    try {
      await addRefusals(await options.database(), options.replica, [...pending.values()]);
    } catch {
      for (const [id, c] of pending) {
        const known = refusals.get(id);
        refusals.set(id, known ? { ...known, count: known.count + c.count } : c);
      }
    }
  };

  const expire = async () => {
    try {
      const db = await options.database();
      let removed = 0;
      for (let n = -1; n !== 0 && removed < 1_000_000; removed += n) n = await expireRows(db, settings.retentionDays);
      if (removed > 0) onEvent({ type: "expired", count: removed });
    } catch (error) {
      logger.warn({ event: "ledger.expire_failed", cause: causeOf(error) });
    }
  };

  return {
    observer: {
      usageRecorded({ record, result }) {
        // "stored" once per settle (a duplicate settle was stored before); the memory store reports nothing else.
        if (buffered && result === "stored") buffered.add(record);
      },
      tenantRefused({ key, keyId, reason, level }) {
        countRefusal(keyId, key, level ?? "key", reason);
      },
    },
    start() {
      if (redis && !drain) {
        drain = createStreamDrain({
          client: redis.client,
          stream: `${redis.prefix}usage`,
          group: "sluice-ledger",
          consumer: options.replica,
          database: options.database,
          batchSize: settings.batchSize,
          flushMs: settings.flushMs,
          claimIdleMs: settings.claimIdleMs,
          timeoutMs: Math.max(1_000, redis.timeoutMs * 4),
          onEvent,
        });
      }
      retention ??= setInterval(() => void expire(), HOUR_MS);
      retention.unref();
      refusalTimer ??= setInterval(() => void writeRefusals(), settings.flushMs);
      refusalTimer.unref();
    },
    stats: () => ({ ...totals }),
    async flush() {
      if (drain) await drain.drainNow();
      await buffered?.flush();
      await writeRefusals();
    },
    async close(graceMs) {
      if (retention) clearInterval(retention);
      if (refusalTimer) clearInterval(refusalTimer);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([writeRefusals(), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
      await drain?.close(graceMs);
      const left = (await buffered?.close(graceMs)) ?? 0;
      if (left > 0) logger.error({ event: "ledger.unwritten", records: left });
    },
  };
}
