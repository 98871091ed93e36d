import type { Meter } from "@opentelemetry/api";
import type { TenancyObserver } from "../flow/observer.js";

/**
 * Tenancy as metrics: authentication failures, admissions and refusals by
 * key, per-key tokens and spend, usage records by result, and the store's
 * health. Keys appear by name; names come from the configuration or the
 * admin service (at most MAX_RUNTIME_KEYS), never from a request, so the
 * series stay bounded. Aliases are left out of per-key series on purpose:
 * key × alias would multiply them.
 */
export function createTenancyMetrics(meter: Meter): TenancyObserver {
  const authFailures = meter.createCounter("sluice.auth.failures", { unit: "{request}", description: "Requests refused for their key, by edge and reason (missing, malformed, unknown)." });
  const admitted = meter.createCounter("sluice.key.admitted", { unit: "{request}", description: "Requests a key's limits admitted; sluice.store.shared false: this replica's fallback admitted them (Redis away)." });
  const refused = meter.createCounter("sluice.key.refused", { unit: "{request}", description: "Requests refused by a key's limits, budget, allowlist or the store, by reason." });
  const tokens = meter.createCounter("sluice.key.tokens", { unit: "{token}", description: "Tokens charged to a key, by gen_ai.token.type (input, output)." });
  const spend = meter.createCounter("sluice.key.spend", { unit: "USD", description: "Money charged to a key." });
  const records = meter.createCounter("sluice.usage.records", { unit: "{record}", description: "Usage records by result: stored, buffered (Redis away), flushed (buffered, then stored), dropped (buffer full), duplicate." });
  const fallbacks = meter.createCounter("sluice.store.fallbacks", { unit: "{operation}", description: "Admissions and settles this replica served alone because Redis was down or slow." });
  const rejections = meter.createCounter("sluice.store.rejections", {
    unit: "{operation}",
    description: "Calls Redis refused for good (CROSSSLOT, MOVED, NOPERM…: a wrong topology, prefix or ACL), by operation and sluice.store.error; readiness is held while they last.",
  });
  const alerts = meter.createCounter("sluice.budget.alerts", { unit: "{alert}", description: "Budget thresholds crossed, by level (key, team, business_line) and threshold; once per period across replicas." });
  const deliveries = meter.createCounter("sluice.alert.deliveries", { unit: "{attempt}", description: "Alert webhook deliveries by result: delivered, retried (an attempt failed), dropped (attempts spent, queue full or shutdown)." });
  let storeUp = 1;
  meter.createObservableGauge("sluice.store.up", { unit: "1", description: "1 while the shared store answers, 0 while this replica runs on its fallback." }).addCallback((r) => r.observe(storeUp));

  return {
    authenticated(event) {
      if (event.failure) authFailures.add(1, { "sluice.edge": event.edge, "sluice.auth.failure": event.failure });
    },
    tenantAdmitted(event) {
      admitted.add(1, { "sluice.key": event.key, "sluice.store.shared": event.shared });
    },
    tenantRefused(event) {
      refused.add(1, { "sluice.key": event.key, "sluice.refusal.reason": event.reason });
    },
    usageRecorded({ record, result }) {
      records.add(1, { "sluice.usage.result": result });
      // Charged once per stream: a duplicate was already counted, and a flushed record when it was buffered.
      if (result === "duplicate" || result === "flushed") return;
      const key = { "sluice.key": record.key };
      tokens.add(record.inputTokens, { ...key, "gen_ai.token.type": "input" });
      tokens.add(record.outputTokens, { ...key, "gen_ai.token.type": "output" });
      if (record.costMicros > 0) spend.add(record.costMicros / 1_000_000, key);
    },
    storeFallback(event) {
      fallbacks.add(1, { "sluice.store.operation": event.operation });
    },
    storeRejected(event) {
      rejections.add(1, { "sluice.store.operation": event.operation, "sluice.store.error": event.code });
    },
    storeState(event) {
      storeUp = event.up ? 1 : 0;
    },
    budgetAlert(event) {
      // Levels and thresholds, not names: names of keys are bounded, but key × threshold × level would multiply them.
      alerts.add(1, { "sluice.budget.level": event.level, "sluice.budget.threshold": event.threshold });
    },
    alertDelivery(event) {
      deliveries.add(1, { "sluice.alert.result": event.result });
    },
  };
}

/** Every hook of each observer, in order: metrics and a test's listener side by side. */
export function bothTenancyObservers(a: TenancyObserver, b: TenancyObserver | undefined): TenancyObserver {
  if (!b) return a;
  return {
    authenticated: (e) => (a.authenticated?.(e), b.authenticated?.(e)),
    tenantAdmitted: (e) => (a.tenantAdmitted?.(e), b.tenantAdmitted?.(e)),
    tenantRefused: (e) => (a.tenantRefused?.(e), b.tenantRefused?.(e)),
    usageRecorded: (e) => (a.usageRecorded?.(e), b.usageRecorded?.(e)),
    storeFallback: (e) => (a.storeFallback?.(e), b.storeFallback?.(e)),
    storeRejected: (e) => (a.storeRejected?.(e), b.storeRejected?.(e)),
    storeState: (e) => (a.storeState?.(e), b.storeState?.(e)),
    budgetAlert: (e) => (a.budgetAlert?.(e), b.budgetAlert?.(e)),
    alertDelivery: (e) => (a.alertDelivery?.(e), b.alertDelivery?.(e)),
  };
}
