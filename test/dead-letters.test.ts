import { randomUUID } from "node:crypto";
import type { Meter } from "@opentelemetry/api";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type AuditLog, createAuditLog } from "../src/audit/audit-log.js";
import { createBatchRunner, type LineExecutor } from "../src/batch/batch-runner.js";
import { createBatchStore } from "../src/batch/batch-store.js";
import type { Database } from "../src/db/database.js";
import { migrate } from "../src/db/migrations.js";
import { openPgDatabase } from "../src/db/pg-database.js";
import { openPgliteDatabase } from "../src/db/pglite-database.js";
import { createLedger, type Ledger } from "../src/ledger/ledger.js";
import type { SluiceRedisClient } from "../src/store/redis-tenant-store.js";
import type { UsageRecord } from "../src/usage/usage-record.js";
import { capturedLogger } from "./helpers/captured-logger.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { dropPrefix, storeClient, testPrefix } from "./helpers/redis.js";

/**
 * One record the database refuses never stops a writer (issue 43, item 2):
 * a NUL in a ledger record's tags (jsonb refuses it), an audit event a
 * CHECK refuses, a batch line's result with a NUL (text refuses it). Each
 * is planted straight into the writer (the usage stream, the buffer, the
 * runner), past any check at the edge. The good records of its batch land
 * at once; it is tried a few times, then kept in sluice_dead_letters,
 * counted and logged by its id; the records after it land. On the
 * embedded database and on the PostgreSQL server.
 */

const DB_START_MS = 90_000;
const LEDGER = { enabled: true, retentionDays: 400, batchSize: 4, flushMs: 60_000, claimIdleMs: 30_000, bufferMax: 1_000 };
const AUDIT = { maxBuffered: 1_000, flushMs: 60_000, batchSize: 4, timeoutMs: 10_000 };

/** A meter that keeps what counters were given. */
function recordingMeter() {
  const added: Array<{ name: string; value: number; attributes: Record<string, unknown> | undefined }> = [];
  const meter = { createCounter: (name: string) => ({ add: (value: number, attributes?: Record<string, unknown>) => added.push({ name, value, attributes }) }) };
  const total = (name: string, source: string) => added.filter((a) => a.name === name && a.attributes?.["sluice.dead_letter.source"] === source).reduce((n, a) => n + a.value, 0);
  return { meter: meter as unknown as Meter, total };
}

/** A usage record as the settle script adds it to the stream: every value a string. */
function streamFields(id: string, tags: string): Record<string, string> {
  return {
    id,
    at: String(Date.now()),
    requestId: `req-${id}`,
    key: "poison-key",
    alias: "sim",
    target: "sim-1",
    inputTokens: "3",
    cachedInputTokens: "0",
    outputTokens: "4",
    reasoningTokens: "0",
    costMicros: "11",
    estimated: "0",
    durationMs: "5",
    outcome: "completed",
    tags,
  };
}

function usageRecord(id: string, tags: Record<string, string>): UsageRecord {
  return {
    id,
    at: Date.now(),
    requestId: `req-${id}`,
    key: "poison-key",
    alias: "sim",
    target: "sim-1",
    inputTokens: 3,
    cachedInputTokens: 0,
    outputTokens: 4,
    reasoningTokens: 0,
    costMicros: 11,
    estimated: false,
    durationMs: 5,
    outcome: "completed",
    tags,
  } as UsageRecord;
}

const kinds: Array<{ name: string; open: () => Promise<{ db: Database; close: () => Promise<void> }> }> = [
  {
    name: "embedded (PGlite)",
    open: async () => {
      const db = await openPgliteDatabase(undefined);
      return { db, close: () => db.close() };
    },
  },
  {
    name: "PostgreSQL server",
    open: async () => {
      const own: OwnDatabase = await ownDatabase();
      const db = openPgDatabase(own.url, 4, () => undefined);
      return {
        db,
        close: async () => {
          await db.close();
          await own.drop();
        },
      };
    },
  },
];

describe.each(kinds)("on the $name database, a record the database refuses", ({ open }) => {
  let db: Database;
  let close: () => Promise<void>;
  let redis: SluiceRedisClient;
  const cleanups: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    ({ db, close } = await open());
    await migrate(db);
    redis = await storeClient();
  }, DB_START_MS);
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  afterAll(async () => {
    redis?.disconnect();
    await close?.();
  });

  const ledgerIds = async (ids: readonly string[]) => (await db.query<{ id: string }>("SELECT id FROM sluice_ledger WHERE id = ANY($1) ORDER BY id", [ids])).rows.map((r) => r.id);
  /** The dead letters of a writer, payloads as text (bytes in the table: they may hold what text refuses). */
  const deadLetters = async (source: string) =>
    (await db.query<{ entry_id: string; code: string; payload: string }>("SELECT entry_id, code, encode(payload, 'base64') AS payload FROM sluice_dead_letters WHERE source = $1 ORDER BY entry_id", [source])).rows.map((r) => ({
      ...r,
      payload: Buffer.from(r.payload, "base64").toString("utf8"),
    }));

  function ledger(withRedis: boolean) {
    const prefix = testPrefix("dead-letters");
    const captured = capturedLogger();
    const metrics = recordingMeter();
    const instance: Ledger = createLedger({
      settings: LEDGER,
      ...(withRedis ? { redis: { client: redis, prefix, timeoutMs: 5_000 } as never } : {}),
      database: async () => db,
      replica: "replica-a",
      logger: captured.logger,
      meter: metrics.meter,
    });
    instance.start();
    cleanups.push(async () => {
      await instance.close(1_000);
      await dropPrefix(prefix);
    });
    return { ledger: instance, prefix, captured, metrics };
  }

  it("in the usage stream (tags with a NUL): its batch's good records land at once, it is dead-lettered after 5 tries, and the records after it land", async () => {
    const { ledger: l, prefix, captured, metrics } = ledger(true);
    const run = randomUUID().slice(0, 8);
    const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `${run}-${from + i}`);
    const add = async (id: string, tags = '{"project":"ok"}') => redis.xadd(`${prefix}usage`, "*", ...Object.entries(streamFields(id, tags)).flat());
    for (const id of ids(0, 2)) await add(id);
    await add(`${run}-poison`, JSON.stringify({ project: "a\u0000b\n\r" }));
    for (const id of ids(2, 4)) await add(id);
    await l.flush();
    // The first batch (4 entries) held the poison: its three good records are written all the same.
    expect(await ledgerIds([...ids(0, 4), `${run}-poison`])).toEqual(ids(0, 3).sort());
    expect(l.stats()).toMatchObject({ refused: 1, deadLettered: 0 });
    for (let i = 0; i < 4; i++) await l.flush();
    expect(l.stats()).toMatchObject({ refused: 4, deadLettered: 1 });
    expect(await ledgerIds(ids(0, 4))).toEqual(ids(0, 4).sort());
    // Later records of every key are written as before.
    for (const id of ids(4, 10)) await add(id);
    await l.flush();
    expect(await ledgerIds(ids(0, 10))).toEqual(ids(0, 10).sort());
    // Named by its row's id (the record's own), its fields kept as the stream held them.
    const letters = await deadLetters("ledger");
    const letter = letters.find((d) => d.entry_id === `${run}-poison`);
    expect(letter).toMatchObject({ code: "22P05" });
    expect(JSON.parse(letter!.payload)).toMatchObject({ id: `${run}-poison`, tags: JSON.stringify({ project: "a\u0000b\n\r" }) });
    expect(metrics.total("sluice.dead_letters", "ledger")).toBe(1);
    const logged = captured.lines.filter((line) => line.event === "ledger.dead_lettered");
    expect(logged).toEqual([expect.objectContaining({ entryId: `${run}-poison`, code: "22P05" })]);
    // The log names the entry, never its content.
    expect(JSON.stringify(captured.lines)).not.toContain("a\\u0000b");
    // Nothing is left pending for this replica: the poison was acknowledged.
    expect((await redis.xpending(`${prefix}usage`, "sluice-ledger"))[0]).toBe(0);
  });

  it("in this replica's buffer (no Redis): the records before and after it are written, it is dead-lettered", async () => {
    const { ledger: l, captured } = ledger(false);
    const run = randomUUID().slice(0, 8);
    const ids = Array.from({ length: 9 }, (_, i) => `${run}-buf-${i}`);
    ids.forEach((id, i) => l.observer.usageRecorded?.({ record: usageRecord(id, i === 2 ? { project: "nul\u0000" } : { project: "ok" }), result: "stored" }));
    for (let i = 0; i < 5; i++) await l.flush();
    const good = ids.filter((_, i) => i !== 2);
    expect(await ledgerIds(ids)).toEqual(good.sort());
    expect(l.stats()).toMatchObject({ deadLettered: 1 });
    expect((await deadLetters("ledger")).some((d) => d.entry_id === ids[2])).toBe(true);
    expect(captured.lines.filter((line) => line.event === "ledger.dead_lettered").map((line) => line.entryId)).toEqual([ids[2]]);
    l.observer.usageRecorded?.({ record: usageRecord(`${run}-after`, { project: "ok" }), result: "stored" });
    await l.flush();
    expect(await ledgerIds([`${run}-after`])).toEqual([`${run}-after`]);
  });

  describe("in the audit log", () => {
    beforeAll(async () => {
      // A refusal PostgreSQL makes of one event: a CHECK on its target (the event builder already cleans NULs).
      await db.query("ALTER TABLE sluice_audit ADD CONSTRAINT refuse_poison CHECK (target IS DISTINCT FROM 'poison')");
    });
    afterAll(async () => {
      await db.query("ALTER TABLE sluice_audit DROP CONSTRAINT refuse_poison");
    });

    function auditLog(withRedis: boolean) {
      const prefix = testPrefix("dead-letters-audit");
      const captured = capturedLogger();
      const metrics = recordingMeter();
      const log: AuditLog = createAuditLog({ database: async () => db, ...(withRedis ? { redis: { client: redis, prefix } } : {}), settings: AUDIT, logger: captured.logger, meter: metrics.meter, replica: "replica-a" });
      log.start();
      cleanups.push(async () => {
        await log.close(1_000);
        await dropPrefix(prefix);
      });
      return { log, captured, metrics };
    }

    const record = (log: AuditLog, target: string) => {
      const id = randomUUID();
      log.record({ id, actor: { kind: "admin", id: "admin-1" }, action: "key.create", target, outcome: "ok" });
      return id;
    };
    const stored = async (ids: readonly string[]) => (await db.query<{ id: string }>("SELECT id::text AS id FROM sluice_audit WHERE id = ANY($1::uuid[])", [ids])).rows.map((r) => r.id).sort();

    it.each([
      { via: "the Redis stream", withRedis: true },
      { via: "this replica's buffer", withRedis: false },
    ])("through $via: the chain goes on past it, and it is kept aside by its id", async ({ withRedis }) => {
      const { log, captured, metrics } = auditLog(withRedis);
      const before = [record(log, "a"), record(log, "b")];
      const poison = record(log, "poison");
      const after = [record(log, "c"), record(log, "d"), record(log, "e")];
      for (let i = 0; i < 5; i++) await log.flush();
      expect(await stored([...before, poison, ...after])).toEqual([...before, ...after].sort());
      expect(log.stats()).toMatchObject({ deadLettered: 1 });
      expect(metrics.total("sluice.dead_letters", "audit")).toBe(1);
      const letters = await deadLetters("audit");
      expect(letters.filter((d) => d.code === "23514").length).toBeGreaterThan(0);
      const logged = captured.lines.filter((line) => line.event === "audit.dead_lettered");
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatchObject({ code: "23514" });
      expect(letters.map((d) => d.entry_id)).toContain(logged[0]!.entryId);
      const later = record(log, "f");
      await log.flush();
      expect(await stored([later])).toEqual([later]);
      expect(await log.verify()).toMatchObject({ ok: true });
    });
  });

  it("in a batch's results (a NUL in a line's answer): the line gets an error result, the answer is kept aside, and the batch's other lines finish", async () => {
    const store = createBatchStore(async () => db);
    const captured = capturedLogger();
    const metrics = recordingMeter();
    const id = `batch_${randomUUID().replace(/-/g, "").slice(0, 24)}`;
    const lines = Array.from({ length: 6 }, (_, i) => ({ customId: `c${i}`, line: i + 1, body: "{}" }));
    await store.createBatch({ id, owner: "", endpoint: "/v1/chat/completions", inputFileId: "file-x", completionWindow: "24h", metadata: null }, lines);
    const executor: LineExecutor = {
      run: async (_batch, line) => ({ result: { ok: true, text: line.customId === "c2" ? `{"answer":"nul\u0000here"}` : `{"answer":"${line.customId}"}` } }),
      notRun: (_batch, line) => ({ ok: false, text: `${line.customId}:not-run` }),
    };
    const runner = createBatchRunner({ store, executor, concurrency: 2, logger: captured.logger, meter: metrics.meter });
    cleanups.push(() => runner.close(1_000));
    runner.add(id);
    await runner.settled(id);
    const batch = await store.batch(id);
    expect(batch).toMatchObject({ status: "completed", counts: { total: 6, completed: 5, failed: 1 } });
    const results = (await db.query<{ custom_id: string; status: string; result: string }>("SELECT custom_id, status, result FROM sluice_batch_lines WHERE batch_id = $1 ORDER BY line", [id])).rows;
    expect(results.map((r) => r.status)).toEqual(["completed", "completed", "failed", "completed", "completed", "completed"]);
    expect(JSON.parse(results[2]!.result)).toMatchObject({ custom_id: "c2", response: null, error: { code: "result_not_stored" } });
    const letters = (await deadLetters("batch")).filter((d) => d.entry_id === `${id}:3`);
    expect(letters).toEqual([expect.objectContaining({ code: "22021", payload: `{"answer":"nul\u0000here"}` })]);
    expect(metrics.total("sluice.dead_letters", "batch")).toBe(1);
    expect(captured.lines.filter((line) => line.event === "batch.dead_lettered")).toEqual([expect.objectContaining({ entryId: `${id}:3`, code: "22021" })]);
  });
});
