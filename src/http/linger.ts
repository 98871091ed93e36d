import type { IncomingMessage } from "node:http";

/** How long the rest of a refused HTTP/1.1 body is read and dropped before the connection is closed. */
export const LINGER_MS = 2_000;
/** How much of it is read at most; past it the connection stops reading until the timer closes it. */
export const LINGER_BYTES = 8 * 1024 * 1024;

/**
 * The most of an unread request body the connection reads and drops to
 * stay open, when the request declared its length: a refused call's usual
 * body (a chat request refused for its key) is already in the socket's
 * buffer, and closing for it cost every refusal a new connection (and the
 * requests a client had pipelined behind it).
 */
export const KEEP_ALIVE_DRAIN_BYTES = 64 * 1024;

/**
 * After a refused HTTP/1.1 exchange whose body was left unread: a small
 * body of declared length is dropped and the connection stays open;
 * anything else (a large body, one of unknown length) gets the lingering
 * close.
 */
export function afterUnreadBody(req: IncomingMessage): void {
  const declared = Number(req.headers["content-length"]);
  if (Number.isSafeInteger(declared) && declared <= KEEP_ALIVE_DRAIN_BYTES) {
    req.resume();
    return;
  }
  lingerAfterRefusal(req);
}

/**
 * The end of an HTTP/1.1 exchange whose request body was not read to its
 * end (refused as too large, malformed or late). The connection cannot
 * carry another request before that body is read, and reading all of it
 * would let a client make the gateway swallow any amount of data; closing
 * at once would reset a client still sending, and a reset can discard the
 * answer it has not read yet. So, like a web server's lingering close: send
 * FIN after the answer, drop what still arrives for a moment (bounded in
 * time, and in bytes: past LINGER_BYTES nothing more is read), then close.
 */
export function lingerAfterRefusal(req: IncomingMessage): void {
  const socket = req.socket;
  if (socket.destroyed) return;
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
  let dropped = 0;
  req.on("data", (chunk: Buffer) => {
    dropped += chunk.length;
    // Past the bound, stop reading rather than reset: a client on a fast link sends 8 MiB in milliseconds, and a
    // reset then could discard the answer it has not read yet. Unread, its sends stall on TCP flow control; the
    // timer still closes the connection.
    if (dropped > LINGER_BYTES) req.pause();
  });
  req.resume();
  socket.end();
}
