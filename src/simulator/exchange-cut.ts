import type { ServerResponse } from "node:http";
import { constants, type Http2ServerResponse } from "node:http2";

/** The HTTP/2 stream behind a response the h2c listener served, if it was one. */
function h2Stream(res: ServerResponse): Http2ServerResponse["stream"] | undefined {
  return "stream" in res ? (res as unknown as Http2ServerResponse).stream : undefined;
}

/**
 * Ends an exchange as a crashing server would. On HTTP/1.1 that is a TCP RST
 * (the peer may lose bytes still in its receive buffer); on HTTP/2 it is
 * RST_STREAM on this stream alone, since the connection carries others.
 */
export function resetExchange(res: ServerResponse): void {
  const stream = h2Stream(res);
  if (stream) stream.close(constants.NGHTTP2_INTERNAL_ERROR);
  else res.socket?.resetAndDestroy();
}

/**
 * Cuts a body short without an error code where the protocol allows it:
 * HTTP/1.1 sends FIN in the middle of the chunked body. HTTP/2 has no such
 * thing (END_STREAM would be a clean end), so it resets the stream.
 */
export function dropExchange(res: ServerResponse): void {
  const stream = h2Stream(res);
  if (stream) stream.close(constants.NGHTTP2_INTERNAL_ERROR);
  else res.socket?.end();
}
