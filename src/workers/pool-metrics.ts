import type { Meter } from "@opentelemetry/api";
import { poolFallbacks } from "./shared-pool.js";
import type { TaskPool } from "./task-pool.js";

/**
 * The pool's counters, read when metrics are collected: what a busy or
 * broken pool costs shows as work done on the relay's thread
 * (`sluice.workers.fallbacks` by reason) and as workers replaced.
 */
export function observePool(meter: Meter, pool: TaskPool): void {
  const fallbacks = meter.createObservableCounter("sluice.workers.fallbacks", {
    unit: "{task}",
    description: "Heavy tasks done on the relay's thread because the worker pool could not do them, by reason (queue_full, timeout, worker_failed, closed).",
  });
  fallbacks.addCallback((result) => {
    for (const [reason, n] of Object.entries(poolFallbacks())) result.observe(n, { reason });
  });
  meter.createObservableCounter("sluice.workers.replaced", { unit: "{worker}", description: "Pool workers started in place of one that crashed or passed a task's deadline." }).addCallback((result) => result.observe(pool.stats().replaced));
  meter.createObservableGauge("sluice.workers.queued", { unit: "{task}", description: "Heavy tasks waiting for a free worker." }).addCallback((result) => result.observe(pool.stats().queued));
}
