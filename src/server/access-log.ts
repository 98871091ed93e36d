import type { Exchange } from "../http/exchange.js";
import type { AnyRequest, AnyResponse } from "../http/node-http.js";
import type { Logger } from "../logging/logger.js";

/**
 * One line per HTTP request, whatever became of it: served, refused before
 * routing (unknown model, bad JSON, 413, 404), cancelled or crashed. Written
 * when the response closes, so the duration is the client's whole wait.
 * Info level, but for health probes answered 200 (debug).
 */
export function writeAccessLine(logger: Logger, exchange: Exchange, req: AnyRequest, res: AnyResponse): void {
  // Probes come every few seconds from every balancer and orchestrator: a healthy answer is a debug line
  // (info drowned the log in them); a probe answered 503 (not ready, draining) stays info.
  const level = exchange.edge === "health" && exchange.code === "ok" ? "debug" : "info";
  logger[level]({
    event: "access",
    requestId: exchange.requestId,
    edge: exchange.edge,
    route: exchange.route,
    method: req.method,
    httpVersion: req.httpVersion,
    status: res.headersSent ? res.statusCode : undefined,
    code: exchange.code ?? (exchange.signal.aborted ? "canceled" : undefined),
    durationMs: Math.round((performance.now() - exchange.startedAt) * 10) / 10,
    ...exchange.traceIds(),
    ...exchange.fields,
  });
}
