import { createExchange, type Exchange } from "../http/exchange.js";
import { sendJsonError } from "../http/json-error.js";
import { afterUnreadBody } from "../http/linger.js";
import { type AnyRequest, type AnyResponse, resetResponse } from "../http/node-http.js";
import type { Logger } from "../logging/logger.js";
import type { Tracing } from "../telemetry/tracing.js";
import { writeAccessLine } from "./access-log.js";

const ignore = () => undefined;

/** A route: serves the request (maybe asynchronously) or returns false when it is not its path. */
export type Route = (req: AnyRequest, res: AnyResponse, exchange: Exchange) => Promise<void> | void | false;

/**
 * The one guard every request passes through, on every edge and HTTP
 * version. Nothing a handler throws, synchronously or later, reaches the
 * process: the client gets a 500 (or, once the response has started, a
 * reset), the error is logged with the request id, and the gateway goes on
 * serving. A malformed percent-escape in a path once ended the process with
 * an uncaught URIError, killing every stream in flight.
 */
export function guardRequests(route: Route, logger: Logger, tracing: Tracing): (req: AnyRequest, res: AnyResponse) => void {
  return (req, res) => {
    let exchange: Exchange | undefined;
    const fail = (error: unknown) => {
      logger.error({ event: "request.crashed", requestId: exchange?.requestId, err: error });
      if (exchange) exchange.code = "internal";
      if (res.destroyed) return;
      if (!res.headersSent) sendJsonError(res, 500, { message: "internal error", type: "api_error", param: null, code: "internal" });
      else resetResponse(res);
    };
    try {
      const current = createExchange(req, res, tracing);
      exchange = current;
      res.setHeader("x-request-id", current.requestId);
      res.once("close", () => {
        current.finish(res.headersSent ? res.statusCode : undefined);
        writeAccessLine(logger, current, req, res);
      });
      // HTTP/2 streams end themselves (the edges reset a refused one once its status is out).
      if (!("stream" in req)) res.once("finish", () => req.complete || afterUnreadBody(req));
      // Stream errors (a reset, a socket torn down) surface through `close`
      // and the exchange's signal; unheard, an `error` event would throw.
      req.on("error", ignore);
      res.on("error", ignore);
      const served = route(req, res, current);
      if (served instanceof Promise) served.catch(fail);
    } catch (error) {
      fail(error);
    }
  };
}
