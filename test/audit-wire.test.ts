import { Code, ConnectError } from "@connectrpc/connect";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuditBreak, type AuditEvent } from "../gen/sluice/admin/v1/admin_service_pb.js";
import { sha256Hex } from "../src/config/key-hash.js";
import { keyId } from "../src/tenancy/principal.js";
import { adminClient } from "./helpers/admin.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { dropPrefix, SHARED_REDIS_URL, testPrefix } from "./helpers/redis.js";

/**
 * The audit log of a running gateway, on a real PostgreSQL server (a
 * database of this test's own) and Redis: admin actions, PII decisions,
 * limit refusals and authentication failures are recorded with their
 * actor, never a secret or a personal value; the chain verifies, and after
 * one row is deleted in the database VerifyAuditChain reports the break at
 * that row.
 */
const ADMIN = "sk-test-admin-audit-4c6e8a0b2d1f3957";
const KEY = "sk-test-audit-key-7d9f1b3c5e0a2846";
const SPENDER = "sk-test-audit-spender-2b4d6f8a0c1e3957";
const EMAIL = "carol.diaz@example.com";
const prefix = testPrefix("audit-wire");

let db: OwnDatabase;
let h: Harness;

beforeAll(async () => {
  db = await ownDatabase();
  h = await startHarness({
    routing: (sim) => ({
      providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: {
        redacting: { provider: "simulator", model: "sim-1?tokens=3", pii: { mode: "redact" } },
        blocking: { provider: "simulator", model: "sim-1?tokens=3", pii: { mode: "block" } },
        priced: { provider: "simulator", model: "sim-1?tokens=3", price: { inputPerMTok: 1_000, outputPerMTok: 2_000 } },
      },
    }),
    env: { ADMIN, KEY, SPENDER },
    auth: {
      adminKeyEnv: "ADMIN",
      keys: [
        { name: "audited-key", keyEnv: "KEY", limits: { requestsPerMinute: 2 } },
        { name: "spender", keyEnv: "SPENDER", budget: { usd: 0.05, period: "month" } },
      ],
    },
    // One call of "priced" (3 output tokens alone cost 0.006 USD) crosses a tenth of the spender's budget.
    alerts: { thresholds: [0.1] },
    store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000 }, postgres: { url: db.url, poolSize: 2 } },
    compliance: { audit: { flushMs: 60_000, authFailuresPerMinute: 2 } },
  });
});
afterAll(async () => {
  await h?.close();
  await db?.drop();
  await dropPrefix(prefix);
});

async function allEvents(): Promise<AuditEvent[]> {
  const admin = adminClient(h.url, ADMIN);
  const events: AuditEvent[] = [];
  let token = "";
  do {
    const page = await admin.listAuditEvents({ pageSize: 2, pageToken: token });
    events.push(...page.events);
    token = page.nextPageToken;
  } while (token !== "");
  return events;
}

describe("the audit log of a running gateway", () => {
  it("records admin actions, policy decisions, refusals and authentication failures, and verifies until a row is deleted", async () => {
    const admin = adminClient(h.url, ADMIN);
    const created = await admin.createKey({ name: "temp", limits: { requestsPerMinute: 10 } });
    await admin.updateKey({ name: "temp", limits: { requestsPerMinute: 20 }, updateMask: { paths: ["limits"] } });
    await admin.revokeKey({ name: "temp" });
    await admin.createTeam({ name: "auditors" });
    await expect(admin.deleteTeam({ name: "nobody" })).rejects.toBeInstanceOf(ConnectError);

    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
    await sdk.chat.completions.create({ model: "redacting", messages: [{ role: "user", content: `mail ${EMAIL}` }] });
    await expect(sdk.chat.completions.create({ model: "blocking", messages: [{ role: "user", content: `mail ${EMAIL}` }] })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await sdk.chat.completions.create({ model: "redacting", messages: [{ role: "user", content: "hello" }] });
    await expect(sdk.chat.completions.create({ model: "redacting", messages: [{ role: "user", content: "again" }] })).rejects.toBeInstanceOf(OpenAI.RateLimitError);

    const stranger = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "sk-not-a-key-of-this-gateway-0000", maxRetries: 0 });
    for (let i = 0; i < 4; i++) await expect(stranger.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const badAdmin = await adminClient(h.url, "sk-wrong-admin-key-000000000000")
      .listKeys({})
      .catch((e: unknown) => ConnectError.from(e));
    expect((badAdmin as ConnectError).code).toBe(Code.Unauthenticated);
    await new OpenAI({ baseURL: `${h.url}/v1`, apiKey: SPENDER, maxRetries: 0 }).chat.completions.create({ model: "priced", max_tokens: 5, messages: [{ role: "user", content: "hi" }] });
    await h.waitForLog((l) => l.event === "budget.alert" && l.name === "spender");

    await h.sluice.audit!.flush();
    const events = await allEvents();
    const seqs = events.map((e) => Number(e.seq));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(seqs).toEqual([...seqs].sort((a, b) => b - a));

    const find = (action: string, target?: string) => events.filter((e) => e.action === action && (target === undefined || e.target === target));
    const adminId = find("key.create", "temp")[0]!.actor!;
    expect(adminId.kind).toBe("admin");
    expect(adminId.id).toMatch(/^[0-9a-f]{12}$/);
    expect(adminId.remote).not.toBe("");
    // The key acted on by id as well as by name: a later key may bear the name.
    expect(find("key.create", "temp")[0]!.details).toEqual({ id: created.info!.id });
    expect(find("key.update", "temp")[0]!.details).toEqual({ fields: "limits", id: created.info!.id });
    expect(find("key.revoke", "temp")).toHaveLength(1);
    expect(find("team.create", "auditors")[0]!.outcome).toBe("ok");
    expect(find("team.delete", "nobody")[0]!.outcome).toBe("failed");

    const redact = find("pii.redact", "redacting");
    expect(redact).toHaveLength(1);
    // A key acts by id (its name, which a later key may bear, is in the details).
    expect(redact[0]!.actor!.id).toBe(keyId(sha256Hex(KEY)));
    expect(redact[0]!.details).toEqual({ key: "audited-key", "found.email": "1" });
    expect(redact[0]!.requestId).not.toBe("");
    expect(find("pii.block", "blocking")[0]!.outcome).toBe("refused");
    expect(find("limit.refuse", "redacting")[0]!.details).toEqual({ key: "audited-key", reason: "requests", level: "key" });
    // Every event about a key's request names the address it came from, as admin and authentication events do.
    for (const e of [...redact, ...find("pii.block", "blocking"), ...find("limit.refuse", "redacting")]) expect(e.actor!.remote, e.action).toMatch(/127\.0\.0\.1/);

    // A budget alert is an event of the gateway's own, once.
    const alerts = find("budget.alert", "spender");
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.actor!.kind).toBe("system");
    expect(alerts[0]!.details).toMatchObject({ id: expect.any(String), level: "key", threshold: "0.1", period: "month", budgetUsd: "0.05" });
    expect(alerts[0]!.details.spentUsd).toMatch(/^0\.0\d+$/);

    // Five failures from one address (four bad keys, one bad admin key): at most two recorded per minute, the second saying so.
    const failures = find("auth.fail");
    const perMinute = new Map<number, number>();
    for (const e of failures) {
      const minute = Math.floor(Number(e.time!.seconds) / 60);
      perMinute.set(minute, (perMinute.get(minute) ?? 0) + 1);
    }
    expect(failures.length).toBeGreaterThanOrEqual(2);
    expect(Math.max(...perMinute.values())).toBe(2);
    expect(failures.some((e) => e.details.limited === "true")).toBe(true);
    expect(failures.every((e) => e.actor!.kind === "anonymous" && e.actor!.remote !== "")).toBe(true);

    // No secret and no personal value anywhere in the log.
    const text = JSON.stringify(events, (_key, value: unknown) => (typeof value === "bigint" ? String(value) : value));
    for (const secret of [created.key, KEY, ADMIN, EMAIL, "sk-not-a-key-of-this-gateway-0000"]) expect(text).not.toContain(secret);

    const whole = await admin.verifyAuditChain({});
    expect(whole.ok).toBe(true);
    expect(Number(whole.checked)).toBe(events.length);

    await db.query("DELETE FROM sluice_audit WHERE seq = 3");
    const broken = await admin.verifyAuditChain({});
    expect(broken.ok).toBe(false);
    expect(Number(broken.firstBreakSeq)).toBe(3);
    expect(broken.firstBreak).toBe(AuditBreak.MISSING);
    expect(Number(broken.checked)).toBe(2);
  });
});
