import { GatewayError } from "../core/errors.js";
import { clampDelay } from "../core/timers.js";
import type { Exchange } from "./exchange.js";
import type { AnyResponse } from "./node-http.js";

const GONE = new GatewayError("canceled", "the client closed the connection");

/**
 * Resolves when `res` can take more bytes; rejects when the client leaves,
 * or when it has taken nothing for `sendTimeoutMs` (then the stream is reset
 * and the exchange abandoned, like nginx's send_timeout). Callers wait only
 * when `write()` returned false, so the fast path costs no promise. A wait
 * on `drain` alone could hang forever: a destroyed HTTP/2 stream emits
 * `close` but neither `drain` nor `error`.
 */
export function writable(res: AnyResponse, exchange: Exchange, sendTimeoutMs: number): Promise<void> {
  if (exchange.signal.aborted || res.destroyed) return Promise.reject(exchange.signal.reason ?? GONE);
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      res.off("drain", onDrain);
      res.off("close", onGone);
      res.off("error", onGone);
      exchange.signal.removeEventListener("abort", onGone);
    };
    const onDrain = () => {
      done();
      resolve();
    };
    const onGone = () => {
      done();
      reject(exchange.signal.reason ?? GONE);
    };
    const timer = setTimeout(() => {
      exchange.abandon(new GatewayError("canceled", `the client took no data for ${sendTimeoutMs} ms (server.sendTimeoutMs)`));
      onGone();
    }, clampDelay(sendTimeoutMs));
    res.on("drain", onDrain);
    res.on("close", onGone);
    res.on("error", onGone);
    exchange.signal.addEventListener("abort", onGone);
  });
}
