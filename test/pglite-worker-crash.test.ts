import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyAudit } from "../src/audit/audit-store.js";
import { openPgliteDatabase } from "../src/db/pglite-database.js";
import { crashEmbeddedWorkerOnNextCall } from "../src/db/pglite-thread.js";
import type { UsageRecord } from "../src/usage/usage-record.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

/**
 * The embedded database's worker dies while the ledger and the audit log
 * write to it (a real gateway, calls over its socket, PGlite on a data
 * directory): the writes in flight fail, stay in their buffers, and go
 * into the worker that replaces it. Afterwards the directory holds every
 * ledger row and every audit event, the chain intact.
 */

const KEY = "sk-test-crash-5e7a9c1b3d2f4680";
const DB_START_MS = 120_000;

let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "sluice-pglite-crash-"));
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

async function serve(h: Harness, events: ReturnType<typeof tenancyEvents>, count: number): Promise<UsageRecord[]> {
  const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
  const records: UsageRecord[] = [];
  for (let i = 0; i < count; i++) {
    const { response } = await sdk.chat.completions.create({ model: "sim", max_tokens: 4, messages: [{ role: "user", content: `question ${i}` }] }).withResponse();
    records.push(await events.recorded(response.headers.get("x-request-id")!));
  }
  return records;
}

/** Calls with a key nobody issued: each is one `auth.fail` event in the audit log. */
async function failAuth(h: Harness, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer sk-nobody-0000000000000000", "content-type": "application/json" },
      body: JSON.stringify({ model: "sim", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(response.status).toBe(401);
    await response.arrayBuffer();
  }
}

describe("a killed embedded-database worker", () => {
  it(
    "loses no ledger record and no audit event: the writes in flight are retried into the replacement",
    async () => {
      const events = tenancyEvents();
      const h = await startHarness({
        models: { sim: "sim-1?tokens=3" },
        env: { CRASH_KEY: KEY },
        auth: { keys: [{ name: "crash-key", keyEnv: "CRASH_KEY" }] },
        store: { postgres: { dataDir } },
        // Long intervals: what is written is written by the test's flush(), never by a timer.
        ledger: { flushMs: 60_000, batchSize: 3 },
        compliance: { audit: { enabled: true, flushMs: 60_000, batchSize: 3 } },
        observer: events.observer,
      });
      const served: UsageRecord[] = [];
      let lost = 0;
      try {
        const ledger = h.sluice.ledger!;
        const audit = h.sluice.audit!;
        served.push(...(await serve(h, events, 2)));
        await failAuth(h, 2);
        await ledger.flush();
        await audit.flush();
        expect(ledger.stats()).toMatchObject({ written: 2, failures: 0 });
        expect(audit.stats()).toMatchObject({ written: 2, failures: 0 });

        served.push(...(await serve(h, events, 5)));
        crashEmbeddedWorkerOnNextCall();
        await ledger.flush();
        expect(ledger.stats().failures).toBe(1);
        await ledger.flush();

        await failAuth(h, 5);
        crashEmbeddedWorkerOnNextCall();
        await audit.flush();
        expect(audit.stats().failures).toBe(1);
        await audit.flush();

        expect(ledger.stats()).toMatchObject({ written: 7, dropped: 0 });
        expect(audit.stats()).toMatchObject({ written: 7, dropped: 0, buffered: 0 });
        lost = h.logs().filter((l) => l.event === "db.worker_lost").length;
      } finally {
        await h.close();
      }
      expect(lost).toBe(2);

      // The directory, opened afresh after the gateway closed: every row, the chain whole.
      const db = await openPgliteDatabase(dataDir);
      try {
        const ledgerRows = (await db.query<{ id: string }>("SELECT id FROM sluice_ledger")).rows;
        expect(new Set(ledgerRows.map((r) => r.id))).toEqual(new Set(served.map((r) => r.id)));
        expect(ledgerRows).toHaveLength(7);
        expect((await db.query<{ n: number }>("SELECT count(*)::int AS n FROM sluice_audit WHERE action = 'auth.fail'")).rows).toEqual([{ n: 7 }]);
        expect(await verifyAudit(db)).toMatchObject({ ok: true, checked: 7 });
      } finally {
        await db.close();
      }
    },
    DB_START_MS,
  );
});
