import { describe, expect, it } from "vitest";
import { type AuditRow, canonicalRow, chainEvents, GENESIS, GENESIS_HASH, hashOf, verifyRows } from "../src/audit/audit-chain.js";
import { type AuditEvent, buildAuditEvent } from "../src/audit/audit-event.js";

/** Events 1..n with a fixed clock and ids, so every run hashes the same text. */
function events(n: number): AuditEvent[] {
  return Array.from({ length: n }, (_, i) =>
    buildAuditEvent(
      { actor: { kind: "admin", id: "admin-1", remote: "10.0.0.1" }, action: "key.create", target: `key-${i + 1}`, outcome: "ok", requestId: `req-${i + 1}`, details: { limit: i, team: "finance" } },
      () => 1_700_000_000_000 + i,
      () => `00000000-0000-4000-8000-${String(i + 1).padStart(12, "0")}`,
    ),
  );
}

describe("the audit hash chain", () => {
  it("links every row to the one before, from the genesis hash, and verifies", () => {
    const rows = chainEvents(events(6), GENESIS);
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(rows[0]!.prevHash).toBe(GENESIS_HASH);
    for (let i = 1; i < rows.length; i++) expect(rows[i]!.prevHash).toBe(rows[i - 1]!.hash);
    expect(rows[0]!.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(verifyRows(rows)).toEqual({ checked: 6, next: { seq: 7, prevHash: rows[5]!.hash } });
  });

  it("reports a deleted middle row as missing at its seq", () => {
    const rows = chainEvents(events(6), GENESIS);
    const check = verifyRows(rows.filter((r) => r.seq !== 3));
    expect(check.firstBreak).toEqual({ seq: 3, reason: "missing" });
    expect(check.checked).toBe(2);
  });

  it("reports a deleted first row as missing at seq 1", () => {
    expect(verifyRows(chainEvents(events(3), GENESIS).slice(1)).firstBreak).toEqual({ seq: 1, reason: "missing" });
  });

  it("reports a row whose action was changed as altered at that seq", () => {
    const rows: AuditRow[] = chainEvents(events(6), GENESIS);
    rows[3] = { ...rows[3]!, event: { ...rows[3]!.event, action: "key.revoke" } };
    expect(verifyRows(rows).firstBreak).toEqual({ seq: 4, reason: "altered" });
  });

  it("reports a row pointing at another row's hash as a broken chain at that seq", () => {
    const rows: AuditRow[] = chainEvents(events(6), GENESIS);
    rows[4] = { ...rows[4]!, prevHash: rows[2]!.hash };
    expect(verifyRows(rows).firstBreak).toEqual({ seq: 5, reason: "chain" });
  });

  it("reports a rewritten row whose hash was recomputed at the next row, whose link no longer holds", () => {
    const rows: AuditRow[] = chainEvents(events(4), GENESIS);
    const forged = { ...rows[1]!, event: { ...rows[1]!.event, outcome: "refused" as const } };
    rows[1] = { ...forged, hash: hashOf(forged.prevHash, forged) };
    expect(verifyRows(rows).firstBreak).toEqual({ seq: 3, reason: "chain" });
  });

  it("checks page by page, each page continuing from where the last one ended", () => {
    const rows = chainEvents(events(9), GENESIS);
    const first = verifyRows(rows.slice(0, 4));
    expect(verifyRows(rows.slice(4), first.next)).toMatchObject({ checked: 5 });
    expect(verifyRows(rows.slice(5), first.next).firstBreak).toEqual({ seq: 5, reason: "missing" });
  });

  it("hashes details by key, whatever order they were given in", () => {
    const [a] = events(1);
    const reordered = { ...a!, details: { team: "finance", limit: 0 } };
    expect(canonicalRow({ seq: 1, event: reordered })).toBe(canonicalRow({ seq: 1, event: a! }));
    expect(canonicalRow({ seq: 1, event: { ...a!, details: { team: "finance", limit: 1 } } })).not.toBe(canonicalRow({ seq: 1, event: a! }));
  });
});

describe("building an audit event", () => {
  it("fills the id and time, and makes text storable", () => {
    const event = buildAuditEvent({ actor: { kind: "anonymous", id: "" }, action: "auth.fail", outcome: "refused", target: "a\u0000b\uD800", details: {} }, () => 42.4);
    expect(event.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(event.at).toBe(42);
    expect(event.target).toBe("a\uFFFDb\uFFFD");
    expect(event.details).toBeUndefined();
  });

  it("refuses an id that is not a UUID", () => {
    expect(() => buildAuditEvent({ id: "not-a-uuid", actor: { kind: "system", id: "sluice" }, action: "config.reload", outcome: "ok" })).toThrow(TypeError);
  });
});
