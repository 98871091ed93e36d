import { type ErrorCode, toGatewayError } from "../../core/errors.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyResponse, sendJson } from "../../http/node-http.js";

/** JSON-RPC codes of the transport's own refusals (the SDK's: -32000 bad request / server error, -32001 session not found, -32700 parse, -32600 invalid request). */
export const TRANSPORT_ERRORS = { parse: -32700, invalidRequest: -32600, badRequest: -32000, sessionNotFound: -32001 } as const;

/** A JSON-RPC error with no id, as an HTTP answer: what the endpoint sends for a request it cannot hand to the MCP server at all. */
export function sendRpcError(res: AnyResponse, exchange: Exchange, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  exchange.code = status === 404 ? "not_found" : status === 401 ? "unauthenticated" : status === 403 ? "permission_denied" : status === 503 ? "shutting_down" : "invalid_request";
  sendJson(res, status, { jsonrpc: "2.0", error: { code, message }, id: null }, headers);
}

/** The HTTP status of the gateway errors that can stop a request before the MCP server sees it. */
function statusOf(code: ErrorCode): number {
  switch (code) {
    case "unauthenticated":
      return 401;
    case "permission_denied":
      return 403;
    case "payload_too_large":
      return 413;
    case "invalid_request":
      return 400;
    case "request_timeout":
      return 408;
    case "canceled":
      return 499;
    case "store_unavailable":
    case "shutting_down":
      return 503;
    default:
      return 500;
  }
}

/** A GatewayError (authentication, body bounds, the store) as a JSON-RPC error with its HTTP status; the message is the gateway's own, safe to show. */
export function sendGatewayRpcError(res: AnyResponse, exchange: Exchange, reason: unknown): void {
  const error = toGatewayError(reason);
  const status = statusOf(error.code);
  exchange.code = error.code;
  const code = error.code === "payload_too_large" ? TRANSPORT_ERRORS.invalidRequest : error.code === "invalid_request" ? TRANSPORT_ERRORS.parse : TRANSPORT_ERRORS.badRequest;
  const headers: Record<string, string> = status === 401 ? { "www-authenticate": "Bearer" } : {};
  if (error.retryAfterMs !== undefined) headers["retry-after"] = String(Math.ceil(error.retryAfterMs / 1000));
  sendJson(res, status, { jsonrpc: "2.0", error: { code, message: error.message }, id: null }, headers);
}
