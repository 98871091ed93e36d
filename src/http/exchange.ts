import { type Context, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { GatewayError } from "../core/errors.js";
import { requestIdFrom } from "../core/request-id.js";
import type { Tracing } from "../telemetry/tracing.js";
import { traceResponse } from "../telemetry/tracing.js";
import { watchDeparture } from "./departure.js";
import { type AnyRequest, type AnyResponse, headerOf, resetResponse } from "./node-http.js";

/** Which door a request came through; a closed list, so logs and metrics stay bounded. */
export type Edge = "grpc" | "grpc-web" | "connect" | "openai" | "anthropic" | "responses" | "gemini" | "mcp" | "health" | "http";

/**
 * One HTTP request from its headers to its response's close: the request
 * id, the one signal that says the client left, its trace, and what the
 * access line will say. Created by the request guard for every request on
 * every edge.
 */
export interface Exchange {
  readonly requestId: string;
  /** The peer's address as the socket says (no forwarding header is trusted): what the audit log records. */
  readonly remote: string;
  /** performance.now() when the request arrived. */
  readonly startedAt: number;
  /**
   * Aborted (reason: GatewayError `canceled`) when the response closes before
   * the gateway ended it: an HTTP/1.1 disconnect, an HTTP/2 RST_STREAM, a
   * session torn down, or a client that stopped reading for too long. The
   * same rule on every edge and HTTP version.
   */
  readonly signal: AbortSignal;
  edge: Edge;
  /** The RPC method or route; never raw client input. */
  route: string;
  /** `ok`, or the outcome's code (a gRPC code name or a gateway error code). */
  code: string | undefined;
  /** Fields the pipeline adds to the access line: alias, provider, model, ttftMs, tokens. */
  readonly fields: Record<string, unknown>;
  /**
   * The request's SERVER span, started on first call (only traced routes
   * call it: chat RPCs and the facade, not health checks), as the context
   * its upstream attempts are children of. The incoming `traceparent` is its
   * parent; the response carries `traceresponse` so a caller can find it.
   */
  trace(): Context;
  /** The server span's ids for the access line, once `trace()` was called. */
  traceIds(): { trace_id: string; span_id: string } | undefined;
  /** Ends the exchange from our side: the response is destroyed and `signal` aborts with `reason`. */
  abandon(reason: GatewayError): void;
  /** Called once by the guard when the response closed. */
  finish(status: number | undefined): void;
}

const CLIENT_LEFT = new GatewayError("canceled", "the client closed the connection");

export function createExchange(req: AnyRequest, res: AnyResponse, tracing: Tracing): Exchange {
  const controller = new AbortController();
  // The first sign of the client leaving an unfinished response (http/departure.ts).
  watchDeparture(req, res, () => controller.abort(CLIENT_LEFT));
  const startedAt = performance.now();
  let span: Span | undefined;
  let spanContext: Context | undefined;
  const exchange: Exchange = {
    requestId: requestIdFrom(headerOf(req, "x-request-id")),
    remote: req.socket?.remoteAddress ?? "",
    startedAt,
    signal: controller.signal,
    edge: "http",
    route: "other",
    code: undefined,
    fields: {},
    trace() {
      if (spanContext) return spanContext;
      const parent = tracing.extract(req.headers);
      // RPCs are named {service}/{method}; HTTP routes {method} {route}.
      const rpc = exchange.edge === "grpc" || exchange.edge === "grpc-web" || exchange.edge === "connect";
      span = tracing.tracer.startSpan(
        rpc ? exchange.route.replace(/^\//, "") : `${req.method ?? ""} ${exchange.route}`,
        {
          kind: SpanKind.SERVER,
          startTime: performance.timeOrigin + startedAt,
          attributes: { "http.request.method": req.method ?? "", "url.path": exchange.route, "sluice.edge": exchange.edge, "sluice.request_id": exchange.requestId },
        },
        parent,
      );
      spanContext = trace.setSpan(parent, span);
      const header = traceResponse(spanContext);
      if (header && !res.headersSent) res.setHeader("traceresponse", header);
      return spanContext;
    },
    traceIds() {
      const ids = span?.spanContext();
      return ids && trace.isSpanContextValid(ids) ? { trace_id: ids.traceId, span_id: ids.spanId } : undefined;
    },
    abandon(reason) {
      if (!controller.signal.aborted) controller.abort(reason);
      resetResponse(res, "cancel");
    },
    finish(status) {
      if (!span) return;
      span.setAttributes({
        ...(status === undefined ? {} : { "http.response.status_code": status }),
        "sluice.outcome": exchange.code ?? "unknown",
        ...(typeof exchange.fields.alias === "string" ? { "gen_ai.request.model": exchange.fields.alias } : {}),
      });
      if (exchange.code !== "ok") span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
  };
  return exchange;
}
