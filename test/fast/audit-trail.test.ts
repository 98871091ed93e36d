import { describe, expect, it } from "vitest";
import type { AuditInput } from "../../src/audit/audit-event.js";
import { authFailureAudit, budgetAlertAudit, complianceAudit, refusalAudit, reloadDetails } from "../../src/audit/audit-trail.js";
import { resolveConfig } from "../../src/config/config.js";

function trail() {
  const events: AuditInput[] = [];
  return { events, record: (e: AuditInput) => void events.push(e) };
}

const base = {
  providers: { p: { kind: "openai", baseUrl: "http://127.0.0.1:1", apiKeyEnv: "P_KEY" } },
  models: { a: { provider: "p", model: "m" }, b: { provider: "p", model: "m" } },
  auth: { keys: [{ name: "k1", sha256: "a".repeat(64) }], teams: [{ name: "t1" }] },
};

describe("what the audit trail records", () => {
  it("a budget alert: the gateway as actor, the level's name as target, the figures in USD", () => {
    const t = trail();
    budgetAlertAudit(t, "host/1/abc")({ level: "team", id: "crew-id", name: "crew", threshold: 0.8, period: "month", periodId: "m2026-12", budgetMicros: 500_000_000, spentMicros: 400_120_000 });
    budgetAlertAudit(t, "host/1/abc")({ level: "key", id: "k1-id", name: "k1", threshold: 1, period: "day", periodId: "d2026-12-06", budgetMicros: 1_000_000 });
    expect(t.events).toEqual([
      {
        actor: { kind: "system", id: "host/1/abc" },
        action: "budget.alert",
        target: "crew",
        outcome: "ok",
        details: { id: "crew-id", level: "team", threshold: 0.8, period: "month", periodId: "m2026-12", budgetUsd: "500", spentUsd: "400.12" },
      },
      { actor: { kind: "system", id: "host/1/abc" }, action: "budget.alert", target: "k1", outcome: "ok", details: { id: "k1-id", level: "key", threshold: 1, period: "day", periodId: "d2026-12-06", budgetUsd: "1" } },
    ]);
  });

  it("events about a key's request carry the client's address: refusals and compliance decisions", () => {
    const t = trail();
    refusalAudit(t)({ key: "k1", keyId: "k1-id", alias: "a", reason: "budget", level: "team", remote: "10.0.0.9" });
    complianceAudit(t)({ action: "route.local_only", outcome: "ok", alias: "a", requestId: "r1", remote: "10.0.0.9" });
    expect(t.events.map((e) => e.actor.remote)).toEqual(["10.0.0.9", "10.0.0.9"]);
  });

  it("authentication failures: at most N per address and minute, the N-th saying so, a new minute counting again; never the presented key", () => {
    const t = trail();
    let now = 60_000 * 100;
    const hear = authFailureAudit(t, 2, () => now);
    for (let i = 0; i < 5; i++) hear({ edge: "http", failure: "unknown", remote: "10.0.0.1" });
    hear({ edge: "http", failure: "missing", remote: "10.0.0.2" });
    hear({ edge: "http", key: "k1" });
    expect(t.events.map((e) => [e.actor.remote, e.details?.limited ?? false])).toEqual([
      ["10.0.0.1", false],
      ["10.0.0.1", true],
      ["10.0.0.2", false],
    ]);
    now += 60_000;
    hear({ edge: "http", failure: "unknown", remote: "10.0.0.1" });
    expect(t.events).toHaveLength(4);
    expect(JSON.stringify(t.events)).not.toContain("sk-");
  });

  it("refusals are capped per key and reason a minute, like authentication failures", () => {
    const t = trail();
    const hear = refusalAudit(t, 2, () => 0);
    for (let i = 0; i < 5; i++) hear({ key: "k1", keyId: "id-k1", alias: "a", reason: "requests", level: "key" });
    hear({ key: "k1", keyId: "id-k1", alias: "a", reason: "budget", level: "key" });
    hear({ key: "k2", keyId: "id-k2", alias: "a", reason: "requests", level: "key" });
    expect(t.events.map((e) => [e.actor.id, e.action, e.details?.limited ?? false])).toEqual([
      ["id-k1", "limit.refuse", false],
      ["id-k1", "limit.refuse", true],
      ["id-k1", "budget.refuse", false],
      ["id-k2", "limit.refuse", false],
    ]);
  });

  it("refusals name the reason and the level; PII decisions carry counts by detector", () => {
    const t = trail();
    refusalAudit(t)({ key: "k1", keyId: "id-k1", alias: "a", reason: "budget", level: "team", requestId: "r1" });
    refusalAudit(t)({ key: "k1", keyId: "id-k1", alias: "a", reason: "revoked" });
    complianceAudit(t)({ action: "pii.redact", outcome: "ok", alias: "a", requestId: "r2", found: { email: 2, card: 1 } });
    expect(t.events.map((e) => [e.action, e.outcome, e.details])).toEqual([
      ["budget.refuse", "refused", { key: "k1", reason: "budget", level: "team" }],
      ["key.refuse", "refused", { key: "k1", reason: "revoked" }],
      ["pii.redact", "ok", { "found.email": 2, "found.card": 1 }],
    ]);
  });

  it("a reload's details name what changed by section, never a value", () => {
    const previous = resolveConfig(base, { P_KEY: "secret-one" });
    const next = resolveConfig({ ...base, models: { a: { provider: "p", model: "n" }, c: { provider: "p", model: "m" } }, auth: { ...base.auth, teams: [{ name: "t2" }] } }, { P_KEY: "secret-two" });
    const details = reloadDetails(previous, next);
    expect(details).toEqual({
      "models.added": "c",
      "models.removed": "b",
      "models.changed": "a",
      "providers.changed": "p",
      "teams.added": "t2",
      "teams.removed": "t1",
    });
    expect(JSON.stringify(details)).not.toContain("secret");
  });
});
