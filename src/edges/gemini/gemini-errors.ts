import { type ErrorCode, type GatewayError, toGatewayError } from "../../core/errors.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyResponse, sendJson } from "../../http/node-http.js";
import { geminiParam, renameLeadingFields } from "./gemini-params.js";

/** The google.rpc.Code names Sluice answers with. */
export type GoogleStatus =
  | "INVALID_ARGUMENT"
  | "FAILED_PRECONDITION"
  | "UNAUTHENTICATED"
  | "PERMISSION_DENIED"
  | "NOT_FOUND"
  | "ALREADY_EXISTS"
  | "ABORTED"
  | "RESOURCE_EXHAUSTED"
  | "CANCELLED"
  | "INTERNAL"
  | "UNAVAILABLE"
  | "DEADLINE_EXCEEDED";

/**
 * Each gateway error as an HTTP status and a Google status name. Statuses
 * keep their HTTP meaning across Sluice's edges (the SDK picks its error by
 * the HTTP code, retries 429 and 5xx); the names are Google's. A spent
 * budget is 402 RESOURCE_EXHAUSTED, as on the other HTTP edges: Google has
 * no 402, but a 429 would be retried by clients for a budget that renews
 * in hours (auth.budgetExceededStatus: 429 brings the 429 back).
 */
export function googleStatus(code: ErrorCode): { readonly status: number; readonly name: GoogleStatus } {
  switch (code) {
    case "invalid_request":
    case "upstream_rejected":
      return { status: 400, name: "INVALID_ARGUMENT" };
    case "failed_precondition":
      return { status: 400, name: "FAILED_PRECONDITION" };
    case "unauthenticated":
      return { status: 401, name: "UNAUTHENTICATED" };
    case "budget_exceeded":
      return { status: 402, name: "RESOURCE_EXHAUSTED" };
    case "permission_denied":
      return { status: 403, name: "PERMISSION_DENIED" };
    case "unknown_model":
    case "upstream_not_found":
    case "not_found":
      return { status: 404, name: "NOT_FOUND" };
    case "request_timeout":
      return { status: 408, name: "DEADLINE_EXCEEDED" };
    case "already_exists":
      return { status: 409, name: "ALREADY_EXISTS" };
    case "not_resumable":
      return { status: 409, name: "ABORTED" };
    case "payload_too_large":
      return { status: 413, name: "INVALID_ARGUMENT" };
    case "rate_limited":
    case "upstream_rate_limited":
    case "upstream_quota_exhausted":
      return { status: 429, name: "RESOURCE_EXHAUSTED" };
    case "canceled":
      return { status: 499, name: "CANCELLED" };
    case "internal":
      return { status: 500, name: "INTERNAL" };
    case "upstream_auth":
    case "upstream_unavailable":
    case "upstream_protocol":
    case "upstream_stream_error":
      return { status: 502, name: "UNAVAILABLE" };
    case "shutting_down":
    case "circuit_open":
    case "store_unavailable":
    case "overloaded":
      return { status: 503, name: "UNAVAILABLE" };
    case "deadline_exceeded":
    case "upstream_timeout":
      return { status: 504, name: "DEADLINE_EXCEEDED" };
  }
}

/** Google's error body: `{"error": {code, message, status}}`, the response of a failed request and an in-stream error chunk alike. */
export interface GoogleErrorBody {
  readonly error: { readonly code: number; readonly message: string; readonly status: GoogleStatus };
}

/**
 * Any failure in Google's error shape, with its HTTP status and headers
 * (Retry-After, the budget's level and reset). Only a GatewayError's safe
 * message is used, its field names said the Gemini way.
 */
export function toGoogleError(reason: unknown): { readonly status: number; readonly headers: Record<string, string>; readonly body: GoogleErrorBody } {
  const error: GatewayError = toGatewayError(reason);
  const mapped = googleStatus(error.code);
  const status = error.budget?.httpStatus === 429 ? 429 : mapped.status;
  const message = error.field === undefined ? error.message : renameLeadingFields(error.message, error.field, geminiParam);
  const headers: Record<string, string> = {};
  if (error.retryAfterMs !== undefined) headers["retry-after"] = String(Math.ceil(error.retryAfterMs / 1000));
  if (error.budget) headers["sluice-budget-level"] = error.budget.level;
  if (error.budget?.reset !== undefined) headers["sluice-budget-reset"] = error.budget.reset;
  return { status, headers, body: { error: { code: status, message, status: mapped.name } } };
}

/** Sends `reason` in Google's error shape; `headers` (the key's quota) go beside its own. */
export function sendGoogleError(res: AnyResponse, exchange: Exchange, reason: unknown, headers: Readonly<Record<string, string>> = {}): void {
  exchange.code = toGatewayError(reason).code;
  const { status, headers: own, body } = toGoogleError(reason);
  sendJson(res, status, body, { ...headers, ...own });
}
