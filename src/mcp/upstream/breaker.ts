/**
 * A server's breaker: `failures` consecutive failures (transport errors,
 * timeouts, a stdio process that died; never a tool's own `isError`
 * answer, nor a JSON-RPC error the server chose to answer) open it for
 * `coolDownMs`, during which calls fail fast instead of each waiting out
 * a timeout against a server that is not there. After the cool-down
 * calls go through again; the first success closes it, another failure
 * opens it anew. Written here rather than taken from resilience/, which
 * carries model calls and is off limits to mcp/ (architecture rule); the
 * clock is injected so tests move time instead of sleeping.
 */
export interface ServerBreaker {
  /** Whether calls should fail fast now. */
  open(): boolean;
  success(): void;
  failure(): void;
}

export const BREAKER_FAILURES = 5;
export const BREAKER_COOL_DOWN_MS = 30_000;

export function createServerBreaker(now: () => number, failures = BREAKER_FAILURES, coolDownMs = BREAKER_COOL_DOWN_MS): ServerBreaker {
  let consecutive = 0;
  let openedAt: number | undefined;
  return {
    open: () => openedAt !== undefined && now() - openedAt < coolDownMs,
    success() {
      consecutive = 0;
      openedAt = undefined;
    },
    failure() {
      consecutive++;
      if (consecutive >= failures) openedAt = now();
    },
  };
}
