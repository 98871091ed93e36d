import type { IncomingMessage } from "node:http";

/** How long the rest of a refused HTTP/1.1 body is read and dropped before the connection is closed. */
export const LINGER_MS = 2_000;
/** How much of it at most. */
export const LINGER_BYTES = 8 * 1024 * 1024;

/**
 * The end of an HTTP/1.1 exchange whose request body was not read to its
 * end (refused as too large, malformed or late). The connection cannot
 * carry another request before that body is read, and reading all of it
 * would let a client make the gateway swallow any amount of data; closing
 * at once would reset a client still sending, and a reset can discard the
 * answer it has not read yet. So, like a web server's lingering close: send
 * FIN after the answer, drop what still arrives for a moment (bounded in
 * time and bytes), then close.
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
    if (dropped > LINGER_BYTES) socket.destroy();
  });
  req.resume();
  socket.end();
}
