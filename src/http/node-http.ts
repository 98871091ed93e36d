import type { IncomingMessage, ServerResponse } from "node:http";
import { type Http2ServerRequest, type Http2ServerResponse, constants as http2Constants } from "node:http2";

/** A request on either HTTP version, as Node's servers hand it over. */
export type AnyRequest = IncomingMessage | Http2ServerRequest;
export type AnyResponse = ServerResponse | Http2ServerResponse;

/** The path without its query string. Never decoded: routes compare raw paths. */
export function pathOf(req: AnyRequest): string {
  const url = req.url ?? "/";
  const q = url.indexOf("?");
  return q < 0 ? url : url.slice(0, q);
}

/** One header's value as a string, whatever Node made of it. */
export function headerOf(req: AnyRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The one JSON writer for plain HTTP responses (health, facade, errors). */
export function sendJson(res: AnyResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

/**
 * Percent-decodes a path segment; undefined when the escape is malformed
 * (`%`, `%zz`, broken UTF-8), which callers answer with 400. A bare
 * decodeURIComponent throws URIError, and inside a request listener that
 * once ended the whole process.
 */
export function decodePathSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** `res.write` for either HTTP version (the two overload sets do not unify). Returns false when the caller should wait. */
export function writeChunk(res: AnyResponse, chunk: string | Uint8Array): boolean {
  return (res as ServerResponse).write(chunk);
}

/**
 * Ends a response that cannot be completed, so the client can tell it is
 * broken: HTTP/2 gets RST_STREAM with an error code (a bare destroy may
 * reset with NO_ERROR, which a client can read as a clean end), HTTP/1.1
 * loses its connection mid-body.
 */
export function resetResponse(res: AnyResponse, code: "internal" | "cancel" = "internal"): void {
  if (res.destroyed) return;
  if ("stream" in res) {
    res.stream.close(code === "internal" ? http2Constants.NGHTTP2_INTERNAL_ERROR : http2Constants.NGHTTP2_CANCEL);
    return;
  }
  res.destroy();
}
