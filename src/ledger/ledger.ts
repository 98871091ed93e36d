import type { Meter } from "@opentelemetry/api";
import type { LedgerSettings } from "../config/settings.js";
import type { Database } from "../db/database.js";
import { causeOf } from "../drain/batch-writer.js";
import { expireDeadLetters, writeDeadLetters } from "../drain/dead-letters.js";
import { createHold } from "../drain/hold.js";
import { createIsolatingWriter } from "../drain/isolate.js";
import { createWriterReporter } from "../drain/writer-reporter.js";
import type { TenancyObserver } from "../flow/observer.js";
import type { Logger } from "../logging/logger.js";
import type { Tenancy } from "../tenancy/tenancy.js";
import type { UsageRecord } from "../usage/usage-record.js";
import { createBufferedLedger } from "./buffered-ledger.js";
import type { LedgerEvent } from "./ledger-events.js";
import { addRefusals, expireRows, insertRows, presentIds, type RefusalCount, rowOf } from "./ledger-rows.js";
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
  /** Refusals of a record by the database (each try counts). */
  readonly refused: number;
  /** Records refused too often, kept aside in sluice_dead_letters. */
  readonly deadLettered: number;
  /** With Redis: records this replica settled and holds until it sees them in the ledger. */
  readonly held: number;
  /** With Redis: records the usage stream lost (Redis restarted empty) that this replica wrote from its hold. */
  readonly restored: number;
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
  let restored = 0;
  const rows = options.meter?.createCounter("sluice.ledger.rows", { unit: "{row}", description: "Ledger rows by result: written, or duplicate (written before: a batch written twice)." });
  const dropped = options.meter?.createCounter("sluice.ledger.dropped", { unit: "{record}", description: "Records that never reached the ledger: a full buffer, or usage-stream entries trimmed before any replica wrote them." });
  const failures = options.meter?.createCounter("sluice.ledger.failures", { unit: "{batch}", description: "Batches that could not be written and wait to be tried again." });

  const reporter = createWriterReporter({
    room: "ledger",
    itemsField: "records",
    logger,
    meter: options.meter,
    count: {
      written: (n) => rows?.add(n, { "sluice.ledger.result": "written" }),
      duplicates: (n) => rows?.add(n, { "sluice.ledger.result": "duplicate" }),
      dropped: (n) => dropped?.add(n),
      failure: () => failures?.add(1),
    },
  });
  const onEvent = (event: LedgerEvent) => {
    if (event.type === "expired") logger.info({ event: "ledger.expired", rows: event.count });
    else reporter.report(event);
  };

  const redis = options.redis;
  let drain: ReturnType<typeof createStreamDrain> | undefined;
  // With Redis, a copy of each record this replica put in the usage stream, until the ledger has it: a Redis that
  // comes back empty lost the stream's unwritten entries, and each replica then writes its own (drain/hold.ts).
  const writeHeld = createIsolatingWriter(
    async (records: readonly UsageRecord[]) => {
      const written = await insertRows(
        await options.database(),
        records.map((r) => rowOf(r, r.id ?? "")),
      );
      return { written, duplicates: records.length - written };
    },
    {
      idOf: (r) => r.id ?? "",
      payloadOf: (r) => JSON.stringify(r),
      // One try: the hold lets go of what it wrote, so a refused record is kept aside at once, never dropped.
      maxTries: 1,
      deadLetter: async (letters) => writeDeadLetters(await options.database(), "ledger", letters),
    },
  );
  const hold = createHold<UsageRecord>({
    max: settings.bufferMax,
    idOf: (r) => r.id ?? "",
    present: async (ids) => presentIds(await options.database(), ids),
    write: async (records) => {
      const result = await writeHeld(records);
      onEvent({ type: "written", written: result.written, duplicates: result.duplicates });
      if (result.deadLettered.length > 0) onEvent({ type: "dead_lettered", letters: result.deadLettered });
    },
  });
  /** Lets go of held records the ledger has and writes those it lacks; a failure (the database away) keeps them. */
  const settleHeld = async (minAgeMs: number) => {
    try {
      const count = await hold.settle(minAgeMs);
      if (count > 0) {
        restored += count;
        logger.warn({ event: "ledger.restored", records: count, reason: "the usage stream lost records this replica settled (Redis restarted empty?); written from this replica's copies" });
      }
    } catch (error) {
      logger.debug({ event: "ledger.hold_check_failed", cause: causeOf(error) });
    }
  };
  let settlingHeld: Promise<void> | undefined;
  const settleHeldOnce = (minAgeMs: number) => (settlingHeld ??= settleHeld(minAgeMs).finally(() => (settlingHeld = undefined)));
  const buffered = redis ? undefined : createBufferedLedger({ database: options.database, bufferMax: settings.bufferMax, batchSize: settings.batchSize, flushMs: settings.flushMs, onEvent });
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
      // Dead letters (every writer's) are kept as long as the ledger's rows, then go the same way.
      for (let n = -1, gone = 0; n !== 0 && gone < 1_000_000; gone += n) n = await expireDeadLetters(db, settings.retentionDays);
    } catch (error) {
      logger.warn({ event: "ledger.expire_failed", cause: causeOf(error) });
    }
  };

  return {
    observer: {
      usageRecorded({ record, result }) {
        // "stored" once per settle (a duplicate settle was stored before); the memory store reports nothing else.
        if (buffered && result === "stored") buffered.add(record);
        // With Redis: in the usage stream now ("flushed": after an outage), held until seen in the ledger.
        else if (!buffered && (result === "stored" || result === "flushed") && record.id !== undefined) hold.add(record);
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
      refusalTimer ??= setInterval(() => {
        void writeRefusals();
        // A held record is checked once a dead replica's entries would have been claimed and written.
        if (hold.size > 0) void settleHeldOnce(settings.claimIdleMs);
      }, settings.flushMs);
      refusalTimer.unref();
    },
    stats: () => ({ ...reporter.totals, restored, held: hold.size }),
    async flush() {
      if (drain) await drain.drainNow();
      await buffered?.flush();
      await writeRefusals();
      await settlingHeld;
      await settleHeldOnce(0);
    },
    async close(graceMs) {
      if (retention) clearInterval(retention);
      if (refusalTimer) clearInterval(refusalTimer);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([writeRefusals(), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
      await drain?.close(graceMs);
      // What this replica settled reaches the ledger before it goes, whatever became of the stream.
      if (hold.size > 0) await Promise.race([settleHeldOnce(0), new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref())]);
      if (hold.size > 0) logger.error({ event: "ledger.unconfirmed", records: hold.size });
      const left = (await buffered?.close(graceMs)) ?? 0;
      if (left > 0) logger.error({ event: "ledger.unwritten", records: left });
    },
  };
}
