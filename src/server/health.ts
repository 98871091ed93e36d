import type { HealthState } from "../health/health-state.js";
import type { Exchange } from "../http/exchange.js";
import { sendJsonError } from "../http/json-error.js";
import { type AnyRequest, type AnyResponse, pathOf, sendJson } from "../http/node-http.js";

/**
 * Serves /healthz (liveness: always 200 while the process answers) and
 * /readyz (readiness: 503 from the start of a drain on, and while a
 * dependency every request needs is missing, named in `waitingFor`;
 * `details` when parts were added, e.g. the MCP servers' health); returns
 * false for any other path.
 */
export function handleHealth(req: AnyRequest, res: AnyResponse, exchange: Exchange, state: HealthState): boolean {
  if (req.method !== "GET" && req.method !== "HEAD") return false;
  const path = pathOf(req);
  if (path !== "/healthz" && path !== "/readyz") return false;
  exchange.edge = "health";
  exchange.route = path;
  const ok = path === "/healthz" || state.ready;
  exchange.code = ok ? "ok" : "unavailable";
  sendJson(res, ok ? 200 : 503, path === "/healthz" ? { status: "ok" } : readiness(state));
  return true;
}

function readiness(state: HealthState): Record<string, unknown> {
  const details = state.details();
  const withDetails = Object.keys(details).length > 0 ? { details } : {};
  if (state.ready) return { status: "ready", ...withDetails };
  if (state.draining) return { status: "draining", ...withDetails };
  return { status: "waiting", waitingFor: state.waitingFor, ...withDetails };
}

export function notFound(res: AnyResponse, exchange: Exchange): void {
  exchange.code = "not_found";
  sendJsonError(res, 404, { message: "not found", type: "invalid_request_error", param: null, code: "not_found" });
}
