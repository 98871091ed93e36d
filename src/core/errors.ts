/**
 * What went wrong, as a closed list. Edges map these codes to gRPC codes and
 * HTTP statuses in one function each; nothing else decides a status.
 */
export type ErrorCode =
  /** The client's request is malformed or invalid. */
  | "invalid_request"
  /** The client named a model alias the gateway does not serve. */
  | "unknown_model"
  /** The client's request body (or its structure) is over a configured limit. */
  | "payload_too_large"
  /** The client did not send its whole request body in time. */
  | "request_timeout"
  /** The client went away or cancelled. */
  | "canceled"
  /** The client's own deadline passed. */
  | "deadline_exceeded"
  /** The gateway is draining and takes no new work. */
  | "shutting_down"
  /** The provider refused the request's content (its 400/422/413). */
  | "upstream_rejected"
  /** The provider does not know the configured model (its 404). */
  | "upstream_not_found"
  /** The provider refused the gateway's credentials: an operator problem. */
  | "upstream_auth"
  /** The provider is rate limiting (its 429). */
  | "upstream_rate_limited"
  /** The gateway's account with the provider has no quota or credit left: an operator problem, not transient. */
  | "upstream_quota_exhausted"
  /** The provider could not be reached or failed (5xx, reset, refused). */
  | "upstream_unavailable"
  /** A provider phase took longer than its timeout. */
  | "upstream_timeout"
  /** The provider sent something that breaks its own protocol. */
  | "upstream_protocol"
  /** The provider reported an error inside an otherwise healthy stream. */
  | "upstream_stream_error"
  /** A provider's admission queue is full or the wait ran out: shed, retry later. */
  | "overloaded"
  /** Every target of the alias has its circuit breaker open. */
  | "circuit_open"
  /** The request carries no key, or one the gateway does not know (or no longer knows). */
  | "unauthenticated"
  /** The key is valid but may not use what it asked for (an alias outside its allowlist). */
  | "permission_denied"
  /** The key is over one of its rate limits (requests or tokens per minute, concurrent streams). */
  | "rate_limited"
  /** The key has spent its budget for the current period. */
  | "budget_exceeded"
  /** The shared store (Redis) cannot be reached and the gateway is configured to fail closed. */
  | "store_unavailable"
  /** A named thing the caller asked to create exists already (an admin key name). */
  | "already_exists"
  /** The request is well formed but the state it needs is not there (a team that keys still belong to; a model that cannot serve what the request needs). */
  | "failed_precondition"
  /** A named thing the caller referred to does not exist (an admin key name, a resumable stream). */
  | "not_found"
  /** A resumable stream outgrew its stored backlog: it can no longer be resumed. */
  | "not_resumable"
  /** A bug in the gateway. */
  | "internal";

/** Whose budget refused a request: the key's own, its team's, or its business line's. */
export type BudgetLevel = "key" | "team" | "business_line";

/** What a budget refusal carries beyond its code, for the edges' status and headers. */
export interface BudgetRefusal {
  readonly level: BudgetLevel;
  /** The HTTP status the facades answer with (auth.budgetExceededStatus); gRPC is RESOURCE_EXHAUSTED either way. */
  readonly httpStatus: 402 | 429;
  /** When the refusing level's budget period renews, as the `sluice-budget-reset` header writes it ("3h12m5s"). */
  readonly reset?: string;
}

export interface GatewayErrorOptions {
  readonly cause?: unknown;
  /** Configured provider name, safe to show. */
  readonly provider?: string;
  /** When the client may retry, from the provider's Retry-After. */
  readonly retryAfterMs?: number;
  /** The request field at fault, for invalid_request. */
  readonly field?: string;
  /** The provider's HTTP status, when the failure was a status. For logs and metrics. */
  readonly upstreamStatus?: number;
  /** Set on `budget_exceeded`. */
  readonly budget?: BudgetRefusal;
  /** A fixed word a client's SDK branches on, beside the code (Anthropic's `error.details.error_code`). */
  readonly reason?: string;
}

/**
 * The gateway's one error type. `message` is always safe to show to a client:
 * it never contains a secret or an upstream payload. Details for operators go
 * in `cause`, which edges log but never send.
 */
export class GatewayError extends Error {
  override readonly name = "GatewayError";
  readonly code: ErrorCode;
  readonly provider?: string;
  readonly retryAfterMs?: number;
  readonly field?: string;
  readonly upstreamStatus?: number;
  readonly budget?: BudgetRefusal;
  readonly reason?: string;

  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    if (options.provider !== undefined) this.provider = options.provider;
    if (options.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
    if (options.field !== undefined) this.field = options.field;
    if (options.upstreamStatus !== undefined) this.upstreamStatus = options.upstreamStatus;
    if (options.budget !== undefined) this.budget = options.budget;
    if (options.reason !== undefined) this.reason = options.reason;
  }
}

/**
 * Turns anything thrown into a GatewayError without leaking its message:
 * unknown errors become `internal` with a generic text.
 */
export function toGatewayError(reason: unknown): GatewayError {
  if (reason instanceof GatewayError) return reason;
  return new GatewayError("internal", "internal error", { cause: reason });
}
