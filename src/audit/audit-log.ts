import type { Meter } from "@opentelemetry/api";
import type { Database } from "../db/database.js";
import { causeOf } from "../drain/batch-writer.js";
import { DEAD_LETTER_TRIES, writeDeadLetters } from "../drain/dead-letters.js";
import { createGroupDrain, type GroupDrain, type StreamEntry } from "../drain/group-drain.js";
import { createHold } from "../drain/hold.js";
import type { DeadLetter } from "../drain/isolate.js";
import { createRetryingBuffer } from "../drain/retrying-buffer.js";
import { createWriterReporter } from "../drain/writer-reporter.js";
import type { Logger } from "../logging/logger.js";
import type { SluiceRedisClient } from "../store/redis-connection.js";
import { within } from "../store/within.js";
import { type AuditEvent, type AuditInput, buildAuditEvent, parseAuditEvent } from "./audit-event.js";
import { type AuditFilter, type AuditPage, type AuditPageRequest, listAudit } from "./audit-list.js";
import { type AuditVerification, appendAudit, presentAuditIds, verifyAudit } from "./audit-store.js";

export interface AuditSettings {
  /** Events waiting in memory at most (and the Redis stream's approximate cap); past it new events are dropped and counted. */
  readonly maxBuffered: number;
  readonly flushMs: number;
  readonly batchSize: number;
  /** Bound on each batch's transaction in the database and on each Redis command. */
  readonly timeoutMs: number;
  /** With Redis: entries another replica read but has not acknowledged for this long are taken over. Default 30 s. */
  readonly claimIdleMs?: number;
}

export interface AuditLogOptions {
  /** Opens the database when first called (behind the port); resolves once it is open and migrated. */
  readonly database: () => Promise<Database>;
  /** The shared store's Redis (Tenancy["redis"] fits): events then wait in its `<prefix>audit` stream. */
  readonly redis?: { readonly client: SluiceRedisClient; readonly prefix: string };
  readonly settings: AuditSettings;
  readonly logger: Logger;
  readonly meter?: Meter;
  /** This replica's name in the stream's consumer group. */
  readonly replica: string;
  /** Tests: the clock events are stamped with. */
  readonly now?: () => number;
}

/** Totals since start. `buffered`: events in this process not yet written (with Redis, those in the stream are not counted). */
export interface AuditStats {
  readonly written: number;
  readonly duplicates: number;
  readonly dropped: number;
  readonly buffered: number;
  readonly failures: number;
  /** Refusals of an event by the database (each try counts). */
  readonly refused: number;
  /** Events refused too often, kept aside in sluice_dead_letters (outside the chain). */
  readonly deadLettered: number;
  /** With Redis: events this replica put in the stream and holds until it sees them in the log. */
  readonly held: number;
}

export interface AuditLog {
  /** Keeps an event for the log: never throws, never waits, O(1). */
  record(input: AuditInput): void;
  /** Starts writing; called once the port listens, so opening the database never delays it. */
  start(): void;
  /** Writes what waits now (tests; shutdown); a failure is counted, not thrown. */
  flush(): Promise<void>;
  close(graceMs: number): Promise<void>;
  stats(): AuditStats;
  list(filter: AuditFilter, page?: AuditPageRequest): Promise<AuditPage>;
  /** Checks the whole chain (audit-store.ts, verifyAudit). */
  verify(): Promise<AuditVerification>;
}

const GROUP = "sluice-audit";

/**
 * The tamper-evident audit log (issue #28 §3): admin actions, policy
 * decisions and authentication failures, appended to one hash chain in
 * store.postgres (audit-store.ts), written off the request path with the
 * ledger's rule that nothing is lost quietly. With Redis each event is
 * added to a capped stream that every replica drains through one consumer
 * group (drain/group-drain.ts), so an event outlives the replica that saw it;
 * without Redis, or when an add fails, it waits in a bounded buffer here
 * (drain/retrying-buffer.ts). Either way a database outage only delays writes,
 * and what cannot be kept is counted, logged and measured.
 */
export function createAuditLog(options: AuditLogOptions): AuditLog {
  const { settings, logger, redis } = options;
  const events = options.meter?.createCounter("sluice.audit.events", { unit: "{event}", description: "Audit events by result: written, duplicate (written before: a batch written twice), or dropped (never reached the log)." });
  const failureCount = options.meter?.createCounter("sluice.audit.failures", { unit: "{batch}", description: "Audit batches that could not be written and wait to be tried again." });
  let started = false;
  let drain: GroupDrain | undefined;
  const adding = new Set<Promise<void>>();

  const reporter = createWriterReporter({
    room: "audit",
    itemsField: "events",
    logger,
    meter: options.meter,
    count: {
      written: (n) => events?.add(n, { "sluice.audit.result": "written" }),
      duplicates: (n) => events?.add(n, { "sluice.audit.result": "duplicate" }),
      // Three sources (a full buffer, entries Redis trimmed, events that are not events) and one running total.
      dropped: (n) => events?.add(n, { "sluice.audit.result": "dropped" }),
      deadLettered: (n) => events?.add(n, { "sluice.audit.result": "dead_lettered" }),
      failure: () => failureCount?.add(1),
    },
  });
  const onEvent = reporter.report;

  const append = async (batch: readonly AuditEvent[]) => appendAudit(await options.database(), batch, settings.timeoutMs);
  const deadLetter = async (letters: readonly DeadLetter[]) => writeDeadLetters(await options.database(), "audit", letters);

  const drop = () => onEvent({ type: "dropped", count: 1, total: reporter.totals.dropped + 1 });
  // An event the database refuses is appended alone after its batch failed, tried again, then kept aside: the chain goes on without it.
  const buffer = createRetryingBuffer<AuditEvent>({
    maxBuffered: settings.maxBuffered,
    batchSize: settings.batchSize,
    flushMs: settings.flushMs,
    write: append,
    isolation: { idOf: (e) => e.id, payloadOf: (e) => JSON.stringify(e), maxTries: DEAD_LETTER_TRIES, deadLetter },
    onEvent,
  });

  /** Stream entries to events; an entry that is not one (written by something else) is acknowledged and counted as dropped. */
  const writeEntries = async (entries: readonly StreamEntry[]) => {
    const batch = entries.flatMap((e) => parseAuditEvent(e.message.e ?? "") ?? []);
    const result = await append(batch);
    // Counted once the batch is written: a batch written again one entry at a time would count them twice.
    for (let i = batch.length; i < entries.length; i++) drop();
    return result;
  };

  // A copy of each event this replica put in the stream, until the log has it: a Redis that comes back empty lost the
  // stream's unwritten entries, and each replica then appends its own (drain/hold.ts).
  const hold = createHold<AuditEvent>({
    max: settings.maxBuffered,
    idOf: (e) => e.id,
    present: async (ids) => presentAuditIds(await options.database(), ids),
    write: async (missing) => {
      for (const event of missing) buffer.add(event);
      logger.warn({ event: "audit.restored", events: missing.length, reason: "the audit stream lost events this replica recorded (Redis restarted empty?); appended from this replica's copies" });
    },
  });
  let settlingHeld: Promise<unknown> | undefined;
  const settleHeld = (minAgeMs: number) =>
    (settlingHeld ??= hold
      .settle(minAgeMs)
      .catch(() => 0)
      .finally(() => (settlingHeld = undefined)));
  let holdTimer: NodeJS.Timeout | undefined;

  const addToStream = (client: SluiceRedisClient, stream: string, event: AuditEvent) => {
    const added = (async () => {
      try {
        await within(client.xadd(stream, "MAXLEN", "~", settings.maxBuffered, "*", "e", JSON.stringify(event)), settings.timeoutMs, "audit add");
        hold.add(event);
      } catch {
        // Redis away or slow: this event waits here instead. Should the add land after all, its id keeps it one row.
        buffer.add(event);
      }
    })().finally(() => adding.delete(added));
    adding.add(added);
  };

  return {
    record(input) {
      let event: AuditEvent;
      try {
        event = buildAuditEvent(input, options.now);
      } catch (error) {
        logger.error({ event: "audit.invalid", action: String(input.action).slice(0, 100), cause: causeOf(error) });
        drop();
        return;
      }
      if (redis && adding.size < settings.maxBuffered) addToStream(redis.client, `${redis.prefix}audit`, event);
      else buffer.add(event);
    },
    start() {
      if (started) return;
      started = true;
      buffer.start();
      if (redis) {
        holdTimer = setInterval(() => {
          // A held event is checked once a dead replica's entries would have been claimed and written.
          if (hold.size > 0) void settleHeld(settings.claimIdleMs ?? 30_000);
        }, settings.flushMs);
        holdTimer.unref();
        drain = createGroupDrain({
          client: redis.client,
          stream: `${redis.prefix}audit`,
          group: GROUP,
          consumer: options.replica,
          write: writeEntries,
          // Named by the event's id (this replica's copy of it finds it there too), or the entry's when it is not readable.
          isolation: { idOf: (e) => parseAuditEvent(e.message.e ?? "")?.id ?? `stream:${e.id}`, payloadOf: (e) => e.message.e ?? "", maxTries: DEAD_LETTER_TRIES, deadLetter },
          batchSize: settings.batchSize,
          flushMs: settings.flushMs,
          claimIdleMs: settings.claimIdleMs ?? 30_000,
          timeoutMs: settings.timeoutMs,
          onEvent,
        });
      }
    },
    async flush() {
      await Promise.all(adding);
      await drain?.drainNow();
      await settlingHeld;
      await settleHeld(0);
      await buffer.flush();
    },
    async close(graceMs) {
      if (holdTimer) clearInterval(holdTimer);
      await Promise.all(adding);
      await drain?.close(graceMs);
      // What this replica recorded reaches the log before it goes, whatever became of the stream.
      if (hold.size > 0) await Promise.race([settleHeld(0), new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref())]);
      const left = await buffer.close(graceMs);
      if (left > 0) logger.error({ event: "audit.unwritten", events: left });
    },
    stats: () => {
      const { claimed: _claimed, ...totals } = reporter.totals;
      return { ...totals, buffered: buffer.waiting + adding.size, held: hold.size };
    },
    list: async (filter, page) => listAudit(await options.database(), filter, page),
    verify: async () => verifyAudit(await options.database(), { timeoutMs: Math.max(settings.timeoutMs, 10_000) }),
  };
}
