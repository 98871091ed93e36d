import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";

/**
 * The admin API as plain HTTP (docs/http-api.md): Connect's unary protocol
 * is a POST of protobuf JSON, so the documented curl calls are made here
 * with fetch (undici, HTTP/1.1) against a real gateway with a ledger and an
 * audit log on a PostgreSQL database of this test's own. Each body below is
 * the one the documentation shows.
 */
const ADMIN_KEY = "sk-test-admin-http-5b7d9f1a3c6e8024";
let h: Harness;
let db: OwnDatabase;

beforeAll(async () => {
  db = await ownDatabase();
  h = await startHarness({
    models: { demo: "sim-1?tokens=3" },
    env: { SLUICE_ADMIN_KEY: ADMIN_KEY },
    auth: { adminKeyEnv: "SLUICE_ADMIN_KEY" },
    store: { postgres: { url: db.url, poolSize: 2 } },
  });
}, 120_000);
afterAll(async () => {
  await h?.close();
  await db?.drop();
});

/** A protobuf JSON body, read by path in the assertions. */
// biome-ignore lint/suspicious/noExplicitAny: a JSON body the assertions read by path
type Json = Record<string, any>;

interface Answer {
  readonly status: number;
  readonly contentType: string | null;
  readonly json: Json;
}

/** `curl -X POST $SLUICE/sluice.admin.v1.AdminService/<method> -H 'content-type: application/json' -H "authorization: Bearer $SLUICE_ADMIN_KEY" -d '<body>'` */
async function admin(method: string, body: unknown, key: string | null = ADMIN_KEY): Promise<Answer> {
  const res = await fetch(`${h.url}/sluice.admin.v1.AdminService/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key === null ? {} : { authorization: `Bearer ${key}` }) },
    body: JSON.stringify(body),
  });
  return { status: res.status, contentType: res.headers.get("content-type"), json: (await res.json()) as Json };
}

async function chat(key: string): Promise<number> {
  const res = await fetch(`${h.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "Hello" }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

describe("the admin API over plain HTTP/1.1 with JSON", () => {
  it("creates a business line, a team and a key in it, lists, updates and revokes it, as docs/http-api.md shows", async () => {
    const line = await admin("CreateBusinessLine", { name: "retail", budget: { usdMicros: "500000000", period: "PERIOD_MONTH" } });
    expect(line.status).toBe(200);
    expect(line.contentType).toBe("application/json");
    expect(line.json.businessLine).toMatchObject({ name: "retail", budget: { usdMicros: "500000000", period: "PERIOD_MONTH" }, source: "KEY_SOURCE_RUNTIME" });

    const team = await admin("CreateTeam", { name: "search", businessLine: "retail", limits: { requestsPerMinute: 600 }, budget: { usdMicros: "50000000", period: "PERIOD_MONTH" } });
    expect(team.status).toBe(200);
    expect(team.json.team).toMatchObject({ name: "search", businessLine: "retail", limits: { requestsPerMinute: 600 } });

    const created = await admin("CreateKey", { name: "search-bot", team: "search", models: ["demo"], limits: { requestsPerMinute: 60 } });
    expect(created.status).toBe(200);
    expect(created.json.key).toMatch(/^sk-sluice-[A-Za-z0-9_-]{43}$/);
    expect(created.json.info).toMatchObject({ name: "search-bot", team: "search", models: ["demo"], limits: { requestsPerMinute: 60 }, source: "KEY_SOURCE_RUNTIME" });
    expect(created.json.info.id).toMatch(/^[0-9a-f]{12}$/);
    expect(Number.isNaN(Date.parse(created.json.info.createdAt))).toBe(false);
    const key = created.json.key as string;
    // The key is real: it calls a model.
    expect(await chat(key)).toBe(200);

    const listed = await admin("ListKeys", {});
    expect(listed.status).toBe(200);
    expect(listed.json.keys.map((k: { name: string }) => k.name)).toEqual(["search-bot"]);
    expect(JSON.stringify(listed.json)).not.toContain(key);

    // 64-bit integers travel as strings (protobuf JSON); the mask names the fields replaced.
    const updated = await admin("UpdateKey", {
      name: "search-bot",
      updateMask: "limits,budget",
      limits: { requestsPerMinute: 120, tokensPerMinute: "200000" },
      budget: { usdMicros: "5000000", period: "PERIOD_DAY" },
    });
    expect(updated.status).toBe(200);
    expect(updated.json.key).toMatchObject({ name: "search-bot", team: "search", models: ["demo"], limits: { requestsPerMinute: 120, tokensPerMinute: "200000" }, budget: { usdMicros: "5000000", period: "PERIOD_DAY" } });

    expect((await admin("ListTeams", {})).json.teams.map((t: { name: string }) => t.name)).toEqual(["search"]);
    expect((await admin("ListBusinessLines", {})).json.businessLines.map((l: { name: string }) => l.name)).toEqual(["retail"]);
    const usage = await admin("GetUsage", { name: "search-bot", period: "PERIOD_DAY" });
    expect(usage.status).toBe(200);
    expect(usage.json).toMatchObject({ name: "search-bot", period: "PERIOD_DAY", budgetUsdMicros: "5000000" });

    // A team with a key in it cannot be deleted: FAILED_PRECONDITION is HTTP 400.
    const busy = await admin("DeleteTeam", { name: "search" });
    expect(busy.status).toBe(400);
    expect(busy.json.code).toBe("failed_precondition");
    // A name in use: ALREADY_EXISTS is HTTP 409.
    const twice = await admin("CreateTeam", { name: "search" });
    expect(twice.status).toBe(409);
    expect(twice.json.code).toBe("already_exists");

    const revoked = await admin("RevokeKey", { name: "search-bot" });
    expect(revoked.status).toBe(200);
    expect(revoked.json.key.name).toBe("search-bot");
    expect(await chat(key)).toBe(401);
    expect((await admin("ListKeys", {})).json.keys ?? []).toEqual([]);
    expect((await admin("DeleteTeam", { name: "search" })).status).toBe(200);
  });

  it("reads the spend report and the audit log", async () => {
    const now = Date.now();
    const report = await admin("GetSpendReport", { start: new Date(now - 86_400_000).toISOString(), end: new Date(now + 60_000).toISOString(), groupBy: ["SPEND_DIMENSION_KEY"] });
    expect(report.status).toBe(200);
    expect(report.json.rows ?? []).toBeInstanceOf(Array);

    // The audit log is written behind the call that made the event: read until the event is there.
    const audit = await vi.waitFor(
      async () => {
        const listed = await admin("ListAuditEvents", { filter: { action: "key.create" }, pageSize: 10 });
        expect(listed.status).toBe(200);
        expect((listed.json.events ?? []).map((e: { target: string }) => e.target)).toContain("search-bot");
        return listed;
      },
      { timeout: 30_000, interval: 100 },
    );
    const event = audit.json.events.find((e: { target: string }) => e.target === "search-bot");
    expect(event).toMatchObject({ action: "key.create", target: "search-bot", outcome: "ok" });
    expect(event.seq).toMatch(/^[0-9]+$/);
    expect(JSON.stringify(audit.json)).not.toContain("sk-sluice-");
    const chain = await admin("VerifyAuditChain", {});
    expect(chain.status).toBe(200);
  });

  it("answers a call without the admin key, or with a wrong one, 401 with a Connect error body", async () => {
    for (const key of [null, "sk-test-not-the-admin-key-00000000"]) {
      const refused = await admin("ListKeys", {}, key);
      expect(refused.status).toBe(401);
      expect(refused.contentType).toBe("application/json");
      expect(refused.json.code).toBe("unauthenticated");
      expect(typeof refused.json.message).toBe("string");
      expect(JSON.stringify(refused.json)).not.toContain(ADMIN_KEY);
    }
    // A body that is not the request message is INVALID_ARGUMENT, HTTP 400.
    const malformed = await admin("CreateKey", { nmae: "typo" });
    expect(malformed.status).toBe(400);
    expect(malformed.json.code).toBe("invalid_argument");
  });
});
