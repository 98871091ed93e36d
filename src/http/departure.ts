import type { IncomingMessage } from "node:http";
import type { AnyRequest, AnyResponse } from "./node-http.js";

/**
 * Calls `leave` once, at the first sign that the client is gone while its
 * response is unfinished (the gateway has not called `end()`), so that the
 * upstream is aborted without waiting for the response's own `close`:
 * - HTTP/2: the stream's `aborted` (RST_STREAM received, or the session torn
 *   down), emitted while Node is still reading the frame; `close` follows
 *   only after the rest of that read has been processed;
 * - HTTP/1.1: the client's FIN. Node's server ends its side of the
 *   connection at once (`httpAllowHalfOpen` is off), so the response can no
 *   longer complete; `close` would follow only once our FIN was flushed,
 *   a loop iteration or more later, or never while the client reads nothing.
 * The response's `close` stays the rule for every other case; `finish`
 * cannot be the test, as HTTP/2's compatibility response emits it before
 * `close` even on a reset.
 */
export function watchDeparture(req: AnyRequest, res: AnyResponse, leave: () => void): void {
  let left = false;
  const onSign = () => {
    if (left || res.writableEnded) return;
    left = true;
    leave();
  };
  res.once("close", onSign);
  if ("stream" in res) {
    res.stream.once("aborted", onSign);
    return;
  }
  // A keep-alive socket serves many requests: the listener goes with this one.
  const socket = (req as IncomingMessage).socket;
  socket.once("end", onSign);
  res.once("close", () => socket.off("end", onSign));
}
