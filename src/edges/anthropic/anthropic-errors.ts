import { type ErrorCode, type GatewayError, toGatewayError } from "../../core/errors.js";
import { anthropicParam, renameLeadingFields } from "./anthropic-params.js";

/** The `error.type` values of Anthropic's error table that Sluice uses. */
export type AnthropicErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "billing_error"
  | "conflict_error"
  | "request_too_large"
  | "rate_limit_error"
  | "api_error"
  | "timeout_error"
  | "overloaded_error";

/** How one gateway error is said to an Anthropic client. */
export interface AnthropicStatus {
  readonly status: number;
  readonly type: AnthropicErrorType;
  /**
   * false: the status is one Anthropic's SDKs retry (408, 409, 429, 5xx), but
   * a retry cannot succeed; said with `x-should-retry: false`, which they obey
   * (Retry-After, when known, still says when it could).
   */
  readonly retry?: false;
}

/**
 * Each gateway error as an Anthropic status and error type. Statuses are
 * the HTTP meaning (the SDKs pick their error class and retry by status:
 * 502/503 are retried like Anthropic's 500), types Anthropic's words. A key
 * over its budget is a 429 as Anthropic's own spend limits are, but one a
 * retry cannot help: its Retry-After is the budget's renewal, possibly days,
 * which an SDK would otherwise sleep through.
 */
export function anthropicStatus(code: ErrorCode): AnthropicStatus {
  switch (code) {
    case "invalid_request":
    case "upstream_rejected":
    case "failed_precondition":
      return { status: 400, type: "invalid_request_error" };
    case "unauthenticated":
      return { status: 401, type: "authentication_error" };
    case "permission_denied":
      return { status: 403, type: "permission_error" };
    case "unknown_model":
    case "upstream_not_found":
    case "not_found":
      return { status: 404, type: "not_found_error" };
    case "request_timeout":
      // Anthropic uses invalid_request_error for 4xx statuses its table does not list.
      return { status: 408, type: "invalid_request_error" };
    case "already_exists":
    case "not_resumable":
      return { status: 409, type: "conflict_error", retry: false };
    case "payload_too_large":
      return { status: 413, type: "request_too_large" };
    case "upstream_rate_limited":
    case "rate_limited":
      return { status: 429, type: "rate_limit_error" };
    case "budget_exceeded":
      return { status: 402, type: "billing_error" };
    case "upstream_quota_exhausted":
      return { status: 429, type: "rate_limit_error", retry: false };
    case "canceled":
      return { status: 499, type: "invalid_request_error" };
    case "internal":
      return { status: 500, type: "api_error" };
    case "upstream_auth":
    case "upstream_unavailable":
    case "upstream_protocol":
    case "upstream_stream_error":
      return { status: 502, type: "api_error" };
    case "shutting_down":
    case "circuit_open":
    case "store_unavailable":
      return { status: 503, type: "api_error" };
    case "deadline_exceeded":
    case "upstream_timeout":
      return { status: 504, type: "timeout_error" };
    case "overloaded":
      return { status: 529, type: "overloaded_error" };
  }
}

/** Anthropic's error body: the response of a failed request, and the data of an in-stream `error` event. */
export interface AnthropicErrorBody {
  readonly type: "error";
  readonly error: { readonly type: AnthropicErrorType; readonly message: string };
  readonly request_id?: string;
}

/** A failed request's response: status, headers (Retry-After, x-should-retry) and body. */
export interface AnthropicError {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: AnthropicErrorBody;
}

/**
 * Anthropic's error shape for any failure, `{"type": "error", "error":
 * {type, message}}`, with the status, Retry-After and x-should-retry the
 * SDKs act on. Only a GatewayError's safe message is used, its field names
 * said the Anthropic way. The same body is the data of an in-stream `error`
 * event (to-anthropic.ts).
 */
export function toAnthropicError(reason: unknown, requestId?: string): AnthropicError {
  const error: GatewayError = toGatewayError(reason);
  // A spent budget is 402 unless the operator kept the 429 of old (auth.budgetExceededStatus), said as Anthropic's own spend limits were.
  const { status, type, retry } = error.budget?.httpStatus === 429 ? anthropicStatus("upstream_quota_exhausted") : anthropicStatus(error.code);
  const message = error.field === undefined ? error.message : renameLeadingFields(error.message, error.field, anthropicParam);
  const headers: Record<string, string> = {};
  if (retry === false) headers["x-should-retry"] = "false";
  if (error.retryAfterMs !== undefined) {
    headers["retry-after"] = String(Math.ceil(error.retryAfterMs / 1000));
    headers["retry-after-ms"] = String(error.retryAfterMs);
  }
  if (error.budget) headers["sluice-budget-level"] = error.budget.level;
  if (error.budget?.reset !== undefined) headers["sluice-budget-reset"] = error.budget.reset;
  const details = error.reason === undefined ? {} : { details: { error_code: error.reason } };
  return { status, headers, body: { type: "error", error: { type, message, ...details }, ...(requestId === undefined ? {} : { request_id: requestId }) } };
}
