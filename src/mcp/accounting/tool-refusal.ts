import type { GatewayError } from "../../core/errors.js";
import type { AdmitResult } from "../../store/tenant-store.js";
import { MCP_ERRORS, McpError } from "../contract.js";

/** Why a tool call was not admitted, as metrics and the span name it. */
export type ToolRefusalReason = "budget" | "requests" | "tokens" | "streams" | "revoked" | "store_unavailable" | "permission_denied";

/** The HTTP status a model request would have been answered with, for each code a tool admission can end in. */
function statusOf(error: GatewayError): number {
  switch (error.code) {
    case "budget_exceeded":
      return error.budget?.httpStatus ?? 402;
    case "rate_limited":
      return 429;
    case "unauthenticated":
      return 401;
    case "permission_denied":
      return 403;
    default:
      return 503;
  }
}

/**
 * A refused tool admission as the JSON-RPC error the caller gets: the
 * message a model request would have had (tenancy/refusal.ts wrote it),
 * and in `data` what an HTTP client would have read from the status and
 * headers: `status` (402, or auth.budgetExceededStatus; 429), `reason`,
 * the `level` that refused (key, team, business_line) and `retryAfter`
 * in whole seconds when a retry can succeed.
 */
export function toolRefusal(error: GatewayError, result?: Extract<AdmitResult, { ok: false }>): McpError {
  const reason: ToolRefusalReason = result === undefined ? (error.code === "permission_denied" ? "permission_denied" : "store_unavailable") : result.reason === "stale" ? "store_unavailable" : result.reason;
  const data = {
    status: statusOf(error),
    reason,
    ...(result === undefined || result.reason === "revoked" ? {} : { level: result.level ?? "key" }),
    ...(error.retryAfterMs === undefined ? {} : { retryAfter: Math.max(1, Math.ceil(error.retryAfterMs / 1_000)) }),
  };
  return new McpError(MCP_ERRORS.refused, error.message, data);
}
