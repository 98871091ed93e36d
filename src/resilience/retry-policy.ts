import type { RetryConfig } from "../config/config.js";
import { backoffDelay } from "../core/backoff.js";
import type { ErrorCode, GatewayError } from "../core/errors.js";

/**
 * What a failed attempt means for the rest of the request (docs/routing.md,
 * "Routing, retries and failover"). Only ever consulted before the first delta has
 * left the gateway; after it, every failure is the client's error status.
 *
 * - `fatal`: the request itself is at fault, or the client is gone: end now.
 * - `next`: this target cannot serve this request: try the next target, never this one again.
 * - `retry`: a transient failure: try the next target, and this one again later (after backoff).
 */
export type FailureKind = "fatal" | "next" | "retry";

export interface Classification {
  readonly kind: FailureKind;
  /** Whether the failure counts against the target's circuit breaker. */
  readonly breaker: boolean;
}

const RULES: Record<ErrorCode, Classification> = {
  // The request: no target will do better.
  invalid_request: { kind: "fatal", breaker: false },
  unknown_model: { kind: "fatal", breaker: false },
  payload_too_large: { kind: "fatal", breaker: false },
  request_timeout: { kind: "fatal", breaker: false },
  upstream_rejected: { kind: "fatal", breaker: false },
  // The client or the gateway ended it.
  canceled: { kind: "fatal", breaker: false },
  deadline_exceeded: { kind: "fatal", breaker: false },
  shutting_down: { kind: "fatal", breaker: false },
  internal: { kind: "fatal", breaker: false },
  // The caller's key: decided before any attempt, never a target's fault.
  unauthenticated: { kind: "fatal", breaker: false },
  permission_denied: { kind: "fatal", breaker: false },
  rate_limited: { kind: "fatal", breaker: false },
  budget_exceeded: { kind: "fatal", breaker: false },
  store_unavailable: { kind: "fatal", breaker: false },
  already_exists: { kind: "fatal", breaker: false },
  not_found: { kind: "fatal", breaker: false },
  failed_precondition: { kind: "fatal", breaker: false },
  not_resumable: { kind: "fatal", breaker: false },
  // This target cannot serve: credentials, model, quota.
  upstream_auth: { kind: "next", breaker: true },
  upstream_not_found: { kind: "next", breaker: true },
  upstream_quota_exhausted: { kind: "next", breaker: true },
  // Shed by our own admission queue: another target may have room.
  overloaded: { kind: "next", breaker: false },
  circuit_open: { kind: "next", breaker: false },
  // Transient.
  upstream_rate_limited: { kind: "retry", breaker: true },
  upstream_unavailable: { kind: "retry", breaker: true },
  upstream_timeout: { kind: "retry", breaker: true },
  upstream_protocol: { kind: "retry", breaker: true },
  upstream_stream_error: { kind: "retry", breaker: true },
};

export function classify(error: GatewayError): Classification {
  return RULES[error.code];
}

/**
 * Full-jitter exponential backoff before trying a target again: a random
 * delay in [0, min(max, base × 2^(tries-1))]. `random` is injected so tests
 * can pin it.
 */
export function backoffMs(tries: number, retry: RetryConfig, random: () => number): number {
  return backoffDelay(tries - 1, { baseMs: retry.baseBackoffMs, maxMs: retry.maxBackoffMs, jitter: "full", random });
}
