import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import type { Exchange } from "../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf } from "../http/node-http.js";

interface Rendered {
  readonly body: Buffer;
  readonly gzip: Buffer;
  readonly etag: string;
}

/** Whether an Accept-Encoding list takes gzip (or anything) with a weight above zero. */
function acceptsGzip(header: string | undefined): boolean {
  return (header ?? "").split(",").some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(";");
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    return (coding === "gzip" || coding === "*") && (q === undefined || Number(q.slice(2)) > 0);
  });
}

/**
 * `GET /openapi.json`: the document, rendered once on first request (the
 * routes it describes are fixed for the life of the process), with an
 * ETag and a cache lifetime, gzipped when the client takes it. It holds
 * no secret (no key, no configuration value), so it is served without
 * a key, as the health endpoints are.
 */
export function createOpenApiRoute(document: () => unknown): (req: AnyRequest, res: AnyResponse, exchange: Exchange) => void {
  let rendered: Rendered | undefined;
  const render = (): Rendered => {
    const body = Buffer.from(JSON.stringify(document()));
    return { body, gzip: gzipSync(body), etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"` };
  };
  return (req, res, exchange) => {
    rendered ??= render();
    const { etag } = rendered;
    exchange.code = "ok";
    const headers = { "content-type": "application/json", etag, "cache-control": "public, max-age=300", vary: "accept-encoding" };
    if (
      headerOf(req, "if-none-match")
        ?.split(",")
        .some((tag) => [etag, `W/${etag}`, "*"].includes(tag.trim()))
    ) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    const gzip = acceptsGzip(headerOf(req, "accept-encoding"));
    const body = gzip ? rendered.gzip : rendered.body;
    res.writeHead(200, { ...headers, ...(gzip ? { "content-encoding": "gzip" } : {}), "content-length": String(body.length) });
    res.end(body);
  };
}
