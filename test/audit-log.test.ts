import type { Meter } from "@opentelemetry/api";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { listAudit } from "../src/audit/audit-list.js";
import { type AuditLog, type AuditSettings, createAuditLog } from "../src/audit/audit-log.js";
import { verifyAudit } from "../src/audit/audit-store.js";
import type { Database } from "../src/db/database.js";
import { migrate } from "../src/db/migrations.js";
import { openPgliteDatabase } from "../src/db/pglite-database.js";
import { capturedLogger } from "./helpers/captured-logger.js";

/**
 * The audit log on the embedded database (PGlite), through its public
 * surface: record, flush, list, verify. The flush interval is a minute:
 * what a test sees is written by its own flush(), never by a timer.
 */

const DB_START_MS = 60_000;
const SETTINGS: AuditSettings = { maxBuffered: 1_000, flushMs: 60_000, batchSize: 7, timeoutMs: 10_000 };

let db: Database;
const logs: AuditLog[] = [];

beforeAll(async () => {
  db = await openPgliteDatabase(undefined);
  await migrate(db);
}, DB_START_MS);
afterEach(async () => {
  for (const log of logs.splice(0)) await log.close(1_000);
  await db.query("TRUNCATE sluice_audit, sluice_audit_head");
});
afterAll(async () => {
  await db?.close();
});

/** A meter that keeps what counters were given, by name and attributes. */
function recordingMeter() {
  const added: Array<{ name: string; value: number; attributes: Record<string, unknown> | undefined }> = [];
  const meter = { createCounter: (name: string) => ({ add: (value: number, attributes?: Record<string, unknown>) => added.push({ name, value, attributes }) }) };
  return { meter: meter as unknown as Meter, added };
}

/** The database, or an outage of it: while `down`, every transaction fails as a lost connection would. */
function flaky(inner: Database) {
  const state = { down: true };
  const wrapped: Database = {
    kind: inner.kind,
    query: (sql, params) => (state.down ? Promise.reject(new Error("connection refused")) : inner.query(sql, params)),
    transaction: (work) => (state.down ? Promise.reject(new Error("connection refused")) : inner.transaction(work)),
    close: () => inner.close(),
  };
  return { database: wrapped, state };
}

function auditLog(options: { database?: Database; settings?: Partial<AuditSettings>; logger?: ReturnType<typeof capturedLogger>["logger"]; meter?: Meter } = {}) {
  const log = createAuditLog({
    database: async () => options.database ?? db,
    settings: { ...SETTINGS, ...options.settings },
    logger: options.logger ?? capturedLogger().logger,
    meter: options.meter,
    replica: "replica-a",
  });
  logs.push(log);
  log.start();
  return log;
}

/** Text and numbers that a careless round trip would change: the chain must still verify. */
const AWKWARD = {
  at: 1_700_000_000_123,
  actor: { kind: "admin", id: "ädmin 😀", remote: "::ffff:10.0.0.1" },
  action: "team.update",
  target: "nul\u0000 and lone \uD83D surrogate",
  outcome: "ok",
  details: { "10": "sorted after 2", "2": true, ratio: 0.1, big: 2 ** 60, tiny: 1e-7, negativeZero: -0, infinite: Infinity, quote: '"\\' },
} as const;

const ACTIONS = ["key.create", "team.update", "budget.refuse"] as const;

/** Event i: one of three actions, two admins, and its number in its details. */
function recordSome(log: AuditLog, count: number, from = 0) {
  for (let i = from; i < from + count; i++) {
    log.record({
      actor: { kind: i % 4 === 0 ? "key" : "admin", id: i % 4 === 0 ? "team-key" : "admin-1", remote: "127.0.0.1" },
      action: ACTIONS[i % 3]!,
      target: `target-${i % 5}`,
      outcome: i % 3 === 2 ? "refused" : "ok",
      requestId: `req-${i}`,
      details: { i, note: "name only" },
    });
  }
}

describe("the audit log on the embedded database", () => {
  it("writes what was recorded in order, lists it newest first with filters and pages, and verifies", async () => {
    const log = auditLog();
    recordSome(log, 40);
    await log.flush();
    expect(log.stats()).toMatchObject({ written: 40, duplicates: 0, dropped: 0, buffered: 0, failures: 0 });

    const seen: number[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await log.list({}, { size: 6, token });
      seen.push(...page.rows.map((r) => r.seq));
      token = page.nextToken;
      pages++;
    } while (token !== undefined);
    expect(pages).toBe(7);
    expect(seen).toEqual(Array.from({ length: 40 }, (_, i) => 40 - i));
    // Recorded order is chain order: event i is row i + 1.
    const newest = await log.list({}, { size: 40 });
    expect(newest.rows.map((r) => r.event.details?.i)).toEqual(Array.from({ length: 40 }, (_, i) => 39 - i));
    expect(newest.nextToken).toBeUndefined();

    const refused = await log.list({ action: "budget.refuse", outcome: "refused" }, { size: 1_000 });
    expect(refused.rows.map((r) => r.event.details?.i)).toEqual(Array.from({ length: 40 }, (_, i) => 39 - i).filter((i) => i % 3 === 2));
    const byKey = await log.list({ actorId: "team-key", target: "target-0" });
    expect(byKey.rows.map((r) => r.event.details?.i)).toEqual([20, 0]);
    expect(byKey.rows[0]!.event).toMatchObject({ actor: { kind: "key", id: "team-key", remote: "127.0.0.1" }, requestId: "req-20", outcome: "refused" });
    const at = newest.rows.find((r) => r.event.details?.i === 10)!.event.at;
    expect((await log.list({ since: at, until: at + 1 })).rows.map((r) => r.event.details?.i)).toContain(10);
    expect((await log.list({ since: at + 86_400_000 })).rows).toEqual([]);
    await expect(log.list({}, { size: 1_001 })).rejects.toMatchObject({ code: "invalid_request", field: "page_size" });
    await expect(log.list({}, { token: "bm90IGEgc2Vx" })).rejects.toMatchObject({ code: "invalid_request", field: "page_token" });

    expect(await log.verify()).toMatchObject({ ok: true, checked: 40, lastSeq: 40 });
  });

  it("reports a row deleted in the database as missing at its seq", async () => {
    const log = auditLog();
    recordSome(log, 12);
    await log.flush();
    await db.query("DELETE FROM sluice_audit WHERE seq = 3");
    expect(await log.verify()).toMatchObject({ ok: false, checked: 2, lastSeq: 2, firstBreak: { seq: 3, reason: "missing" } });
  });

  it("reports a row changed in the database as altered at its seq, also past the first page", async () => {
    const log = auditLog();
    recordSome(log, 12);
    await log.flush();
    expect(await verifyAudit(db, { pageSize: 4 })).toMatchObject({ ok: true, checked: 12 });
    await db.query("UPDATE sluice_audit SET target = 'x' WHERE seq = 5");
    expect(await log.verify()).toMatchObject({ ok: false, checked: 4, firstBreak: { seq: 5, reason: "altered" } });
    expect(await verifyAudit(db, { pageSize: 4 })).toMatchObject({ ok: false, checked: 4, firstBreak: { seq: 5, reason: "altered" } });
  });

  it("reports rows cut from the end, which the chain alone cannot show, also after more were appended", async () => {
    const log = auditLog();
    recordSome(log, 5);
    await log.flush();
    await db.query("DELETE FROM sluice_audit WHERE seq >= 4");
    expect(await log.verify()).toMatchObject({ ok: false, checked: 3, lastSeq: 3, firstBreak: { seq: 4, reason: "missing" } });
    recordSome(log, 2, 5);
    await log.flush();
    expect((await listAudit(db, {})).rows.map((r) => r.seq)).toEqual([7, 6, 3, 2, 1]);
    expect(await verifyAudit(db)).toMatchObject({ ok: false, firstBreak: { seq: 4, reason: "missing" } });
  });

  it("keeps events while the database is away and writes them all, in order, once it is back", async () => {
    const { database, state } = flaky(db);
    const captured = capturedLogger();
    const log = auditLog({ database, logger: captured.logger });
    recordSome(log, 20);
    await log.flush();
    expect(log.stats()).toMatchObject({ written: 0, buffered: 20, dropped: 0 });
    expect(log.stats().failures).toBeGreaterThan(0);
    expect(captured.lines.filter((l) => l.event === "audit.write_failed")).toHaveLength(1);
    recordSome(log, 5, 20);
    state.down = false;
    await log.flush();
    expect(log.stats()).toMatchObject({ written: 25, duplicates: 0, buffered: 0, dropped: 0 });
    expect(captured.lines.some((l) => l.event === "audit.recovered")).toBe(true);
    const rows = (await listAudit(db, {}, { size: 100 })).rows;
    expect(rows.map((r) => r.event.details?.i)).toEqual(Array.from({ length: 25 }, (_, i) => 24 - i));
    expect(await log.verify()).toMatchObject({ ok: true, checked: 25 });
  });

  it("drops and counts the newest events past its bound, and says so once", async () => {
    const { database, state } = flaky(db);
    const captured = capturedLogger();
    const { meter, added } = recordingMeter();
    const log = auditLog({ database, logger: captured.logger, meter, settings: { maxBuffered: 5 } });
    recordSome(log, 8);
    expect(log.stats()).toMatchObject({ buffered: 5, dropped: 3 });
    expect(captured.lines.filter((l) => l.event === "audit.dropped")).toEqual([expect.objectContaining({ events: 1, droppedTotal: 1 })]);
    expect(added.filter((a) => a.name === "sluice.audit.events" && a.attributes?.["sluice.audit.result"] === "dropped").reduce((n, a) => n + a.value, 0)).toBe(3);
    state.down = false;
    await log.flush();
    expect((await listAudit(db, {})).rows.map((r) => r.event.details?.i)).toEqual([4, 3, 2, 1, 0]);
    expect(added.filter((a) => a.name === "sluice.audit.events" && a.attributes?.["sluice.audit.result"] === "written").reduce((n, a) => n + a.value, 0)).toBe(5);
  });

  it("reads back awkward text and numbers exactly as it hashed them", async () => {
    const log = auditLog();
    log.record(AWKWARD);
    await log.flush();
    expect(await log.verify()).toMatchObject({ ok: true, checked: 1 });
  });

  it("drops an event it could never store, and records the rest", async () => {
    const captured = capturedLogger();
    const log = auditLog({ logger: captured.logger });
    log.record({ id: "not-a-uuid", actor: { kind: "system", id: "sluice" }, action: "config.reload", outcome: "ok" });
    recordSome(log, 2);
    await log.flush();
    expect(log.stats()).toMatchObject({ written: 2, dropped: 1 });
    expect(captured.lines.some((l) => l.event === "audit.invalid")).toBe(true);
  });
});
