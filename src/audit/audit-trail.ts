import type { ComplianceDecision } from "../compliance/compliance-decision.js";
import type { Config } from "../config/config.js";
import { diffConfig, type NamedChanges } from "../config/config-diff.js";
import type { TenancyObserver } from "../flow/observer.js";
import { usdFromMicros } from "../tenancy/quota-headers.js";
import type { AuditDetails, AuditInput } from "./audit-event.js";

/** Where the gateway tells what happened; the audit log, or nothing while it is off. */
export interface AuditTrail {
  /** Never throws, never waits (the log buffers). */
  record(input: AuditInput): void;
}

export const NO_AUDIT: AuditTrail = { record: () => undefined };

/** Distinct buckets (addresses, keys) counted per minute at most; past it new buckets are not recorded that minute. */
const MAX_TRACKED_BUCKETS = 10_000;

/**
 * At most `perMinute` events per bucket and minute: `last` for the one
 * that reaches the limit (the event says so), `drop` past it, so a client
 * hammering with bad keys, or a key hammering past its limit, cannot flood
 * the log (the metrics still count every one).
 */
export function perMinuteLimiter(perMinute: number, now: () => number = Date.now): (bucket: string) => "record" | "last" | "drop" {
  let minute = -1;
  const counts = new Map<string, number>();
  return (bucket) => {
    const current = Math.floor(now() / 60_000);
    if (current !== minute) {
      minute = current;
      counts.clear();
    }
    const seen = counts.get(bucket) ?? 0;
    if (seen >= perMinute || (seen === 0 && counts.size >= MAX_TRACKED_BUCKETS)) return "drop";
    counts.set(bucket, seen + 1);
    return seen + 1 === perMinute ? "last" : "record";
  };
}

/**
 * Authentication failures, at most `perMinute` per remote address and
 * minute. Never the presented key: only why it failed (missing, malformed,
 * unknown).
 */
export function authFailureAudit(trail: AuditTrail, perMinute: number, now: () => number = Date.now): NonNullable<TenancyObserver["authenticated"]> {
  const limit = perMinuteLimiter(perMinute, now);
  return (event) => {
    if (!event.failure) return;
    const remote = event.remote ?? "";
    const verdict = limit(remote);
    if (verdict === "drop") return;
    trail.record({
      actor: { kind: "anonymous", id: "", ...(remote ? { remote } : {}) },
      action: "auth.fail",
      outcome: "refused",
      details: { edge: event.edge, failure: event.failure, ...(verdict === "last" ? { limited: true } : {}) },
    });
  };
}

/**
 * Refusals by a key's limits or budget (at the level that refused), a
 * revoked key, an alias outside its allowlist: at most `perMinute` per key
 * and reason a minute, as for authentication failures.
 */
export function refusalAudit(trail: AuditTrail, perMinute = Number.POSITIVE_INFINITY, now: () => number = Date.now): NonNullable<TenancyObserver["tenantRefused"]> {
  const limit = perMinuteLimiter(perMinute, now);
  return (event) => {
    const verdict = limit(`${event.keyId}\u0000${event.reason}`);
    if (verdict === "drop") return;
    const action = event.reason === "budget" ? "budget.refuse" : event.reason === "revoked" || event.reason === "not_allowed" ? "key.refuse" : event.reason === "store_unavailable" ? "store.refuse" : "limit.refuse";
    trail.record({
      // The key by id: its name may be borne later by another key; the name rides along for people.
      actor: { kind: "key", id: event.keyId, ...(event.remote ? { remote: event.remote } : {}) },
      action,
      target: event.alias,
      outcome: "refused",
      ...(event.requestId ? { requestId: event.requestId } : {}),
      details: { key: event.key, reason: event.reason, ...(event.level ? { level: event.level } : {}), ...(verdict === "last" ? { limited: true } : {}) },
    });
  };
}

/**
 * An announced budget alert (tenancy/budget-alerts.ts): announced once per
 * level, period and threshold across replicas, so written once too. The
 * gateway acts (the announcing replica); the target is the level's name.
 */
export function budgetAlertAudit(trail: AuditTrail, replica: string): NonNullable<TenancyObserver["budgetAlert"]> {
  return (event) => {
    trail.record({
      actor: { kind: "system", id: replica },
      action: "budget.alert",
      target: event.name,
      outcome: "ok",
      details: {
        id: event.id,
        level: event.level,
        threshold: event.threshold,
        ...(event.period ? { period: event.period } : {}),
        ...(event.periodId ? { periodId: event.periodId } : {}),
        ...(event.budgetMicros === undefined ? {} : { budgetUsd: usdFromMicros(event.budgetMicros) }),
        ...(event.spentMicros === undefined ? {} : { spentUsd: usdFromMicros(event.spentMicros) }),
      },
    });
  };
}

/** A PII block, redaction or local-only routing, with counts by detector (never a value). */
export function complianceAudit(trail: AuditTrail): (decision: ComplianceDecision) => void {
  return (decision) => {
    const details: Record<string, string | number> = decision.principal ? { key: decision.principal.name } : {};
    for (const [kind, n] of Object.entries(decision.found ?? {})) details[`found.${kind}`] = n;
    trail.record({
      actor: { ...(decision.principal ? { kind: "key", id: decision.principal.id } : { kind: "anonymous", id: "" }), ...(decision.remote ? { remote: decision.remote } : {}) },
      action: decision.action,
      target: decision.alias,
      outcome: decision.outcome,
      requestId: decision.requestId,
      ...(Object.keys(details).length > 0 ? { details } : {}),
    });
  };
}

/** What a reload changed, by section and name (never a value, so never a key or secret). */
export function reloadDetails(previous: Config, next: Config): AuditDetails {
  const details: Record<string, string> = {};
  for (const [section, changes] of Object.entries(diffConfig(previous, next)) as Array<[string, NamedChanges]>) {
    for (const what of ["added", "removed", "changed"] as const) if (changes[what].length > 0) details[`${section}.${what}`] = changes[what].join(",");
  }
  return details;
}
