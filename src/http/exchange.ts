import { GatewayError } from "../core/errors.js";
import { requestIdFrom } from "../core/request-id.js";
import { type AnyRequest, type AnyResponse, headerOf, resetResponse } from "./node-http.js";

/** Which door a request came through; a closed list, so logs and metrics stay bounded. */
export type Edge = "grpc" | "grpc-web" | "connect" | "openai" | "health" | "http";

/**
 * One HTTP request from its headers to its response's close: the request
 * id, the one signal that says the client left, and what the access line
 * will say. Created by the request guard for every request on every edge.
 */
export interface Exchange {
  readonly requestId: string;
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
  /** Ends the exchange from our side: the response is destroyed and `signal` aborts with `reason`. */
  abandon(reason: GatewayError): void;
}

const CLIENT_LEFT = new GatewayError("canceled", "the client closed the connection");

export function createExchange(req: AnyRequest, res: AnyResponse): Exchange {
  const controller = new AbortController();
  // writableEnded is true once the gateway called end(); a close before that
  // is the client leaving. HTTP/2's compatibility response emits `finish`
  // before `close` even on a reset, so `finish` cannot be the test.
  res.once("close", () => {
    if (!res.writableEnded) controller.abort(CLIENT_LEFT);
  });
  return {
    requestId: requestIdFrom(headerOf(req, "x-request-id")),
    startedAt: performance.now(),
    signal: controller.signal,
    edge: "http",
    route: "other",
    code: undefined,
    fields: {},
    abandon(reason) {
      if (!controller.signal.aborted) controller.abort(reason);
      resetResponse(res, "cancel");
    },
  };
}
