import { WebSocketServer } from "ws";
import { toGatewayError } from "../../core/errors.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson } from "../../http/node-http.js";
import { upgradeOf, wantsWebSocket } from "../../http/upgrade.js";
import type { Logger } from "../../logging/logger.js";
import { parseTagsHeader, TAGS_HEADER } from "../../tenancy/tags.js";
import { toResponsesError } from "./responses-errors.js";
import type { ResponsesOptions } from "./responses-route.js";
import { type SocketLimits, serveResponsesSocket } from "./responses-socket.js";

export interface ResponsesSocketOptions extends ResponsesOptions {
  /** config.responses.websocket and its limits; `enabled` false: every upgrade is answered 426. */
  readonly websocket: SocketLimits & { readonly enabled: boolean };
  /** Each response of a socket writes its own access line. */
  readonly logger: Logger;
  /** Resolves when the gateway starts to drain: sockets with nothing running then close (1001). */
  readonly untilDraining?: (signal: AbortSignal) => Promise<void>;
}

/**
 * 426 Upgrade Required: what Codex reads as "use POST" (it falls back to
 * HTTP on 426, and on no other status). `Upgrade: websocket` says what is
 * offered, over HTTP/1.1 only: HTTP/2 forbids the header (and has no upgrade).
 */
function upgradeRequired(req: AnyRequest, res: AnyResponse, exchange: Exchange, message: string, offered: boolean): void {
  exchange.code = "upgrade_required";
  const upgrade: Record<string, string> = offered && req.httpVersionMajor === 1 ? { upgrade: "websocket" } : {};
  sendJson(res, 426, { error: { message, type: "invalid_request_error", param: null, code: "upgrade_required" } }, upgrade);
}

/**
 * `GET /v1/responses`: the Responses WebSocket mode. The key is checked
 * (and `sluice-tags` read) before the upgrade completes, so a refusal is a
 * plain HTTP answer (401, 403, 400) on the upgrade request; then
 * responses-socket.ts serves the socket. Messages are bounded by the body
 * limit (`limits.maxRequestBytes`): a larger one closes the socket with 1009
 * before any of it is read as JSON. Without `responses.websocket` (or
 * without an upgrade, or over HTTP/2) the answer is 426, never 404: clients
 * that try the WebSocket first fall back to `POST /v1/responses` on it.
 */
/** The route while `responses.websocket` is off: 426 for every upgrade. */
export function responsesSocketOff(req: AnyRequest, res: AnyResponse, exchange: Exchange): void {
  upgradeRequired(req, res, exchange, "the WebSocket mode is off on this gateway (responses.websocket): send POST /v1/responses", false);
}

export function createResponsesSocketRoute(options: ResponsesSocketOptions): (req: AnyRequest, res: AnyResponse, exchange: Exchange) => Promise<void> {
  const server = new WebSocketServer({ noServer: true, maxPayload: options.limits.maxRequestBytes, perMessageDeflate: false, clientTracking: false });
  return async (req, res, exchange) => {
    if (!options.websocket.enabled) return responsesSocketOff(req, res, exchange);
    const upgrade = wantsWebSocket(req) ? upgradeOf(req) : undefined;
    if (!upgrade) return upgradeRequired(req, res, exchange, "GET /v1/responses is the WebSocket mode: connect with Upgrade: websocket over HTTP/1.1, or send POST /v1/responses", true);
    let principal: Awaited<ReturnType<typeof options.calls.identify>>;
    let tags: Readonly<Record<string, string>>;
    try {
      principal = await options.calls.identify(headerOf(req, "authorization"), exchange.edge, exchange.fields, exchange.remote);
      tags = parseTagsHeader(headerOf(req, TAGS_HEADER));
    } catch (error) {
      const { status, headers, body } = toResponsesError(error);
      exchange.code = toGatewayError(error).code;
      sendJson(res, status, body, headers);
      return;
    }
    // The upgrade's span is the parent of every response's attempts.
    exchange.trace();
    server.handleUpgrade(upgrade.req, upgrade.socket, upgrade.head, (ws) => {
      exchange.code = "ok";
      exchange.fields.websocket = true;
      serveResponsesSocket(ws, {
        calls: options.calls,
        limits: options.limits,
        socket: options.websocket,
        keepaliveMs: options.keepaliveMs,
        sendTimeoutMs: options.sendTimeoutMs,
        logger: options.logger,
        exchange,
        tags,
        ...(options.untilDraining ? { untilDraining: options.untilDraining } : {}),
        ...(principal ? { principal } : {}),
        ...(options.state ? { state: options.state } : {}),
      });
    });
  };
}
