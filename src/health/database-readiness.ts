import { backoffDelay } from "../core/backoff.js";
import type { HealthState } from "./health-state.js";

/** Readiness held back for the database: `start` opens it (once the port listens); `stop` at close. */
export interface DatabaseReadiness {
  start(): void;
  stop(): void;
}

const RETRY = { baseMs: 500, maxMs: 30_000 } as const;

/**
 * `/readyz` (and the gRPC health service) say not ready, waiting for
 * `database`, from now until the database is open and migrated, when a
 * store the gateway keeps needs it from the start (the ledger, the audit
 * log, the semantic cache, stored responses and batches by
 * `store.postgres`). `/healthz` answers all along: the process is alive,
 * it only should not be sent work whose records would wait. An open that
 * fails is tried again with capped backoff; readiness stays held until
 * one succeeds.
 */
export function holdReadinessForDatabase(health: Pick<HealthState, "hold">, open: () => Promise<unknown>, onFailed: (error: unknown, retryInMs: number) => void): DatabaseReadiness {
  health.hold("database", true);
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let started = false;
  let failures = 0;
  const attempt = () => {
    open().then(
      () => {
        if (!stopped) health.hold("database", false);
      },
      (error: unknown) => {
        if (stopped) return;
        const wait = backoffDelay(failures++, RETRY);
        onFailed(error, wait);
        timer = setTimeout(attempt, wait);
        timer.unref();
      },
    );
  };
  return {
    start() {
      if (started || stopped) return;
      started = true;
      attempt();
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
