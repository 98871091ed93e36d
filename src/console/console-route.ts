import type { ConsoleAccess } from "../config/settings.js";
import type { Exchange } from "../http/exchange.js";
import { sendJsonError } from "../http/json-error.js";
import { type AnyRequest, type AnyResponse, headerOf, pathOf } from "../http/node-http.js";
import type { ConsoleAssets } from "./console-assets.js";

export const CONSOLE_PATH = "/console";

/** Longest path looked up; anything longer is not one of our file names. */
const MAX_PATH_CHARS = 256;

/**
 * The page's own code only: no inline script, no other origin (nothing is
 * fetched from a CDN), calls to this gateway alone. Inline style attributes
 * are allowed: the chart library positions its parts with them.
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": "default-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

/** Serves /console; returns false for any other path. */
export type ConsoleRoute = (req: AnyRequest, res: AnyResponse, exchange: Exchange) => boolean;

/** Whether a comma-separated If-None-Match list names `etag` (or is `*`). */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(",").some((tag) => {
    const t = tag.trim();
    return t === "*" || t === etag || t === `W/${etag}`;
  });
}

function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  return header.split(",").some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(";");
    if (coding !== "gzip" && coding !== "*") return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/**
 * The console's static files at /console/ on the gateway's own port.
 * GET and HEAD only; `/console` redirects to `/console/` (the page's
 * relative URLs need the slash); a path names a file exactly or is 404.
 * Validators (ETag, 304), cache lifetimes (a year for content-hashed
 * names, revalidation for the page), the build's precomputed gzip when the
 * client takes it, and headers that keep the page to its own code.
 * `access` off: nothing is served. The files hold no data and no key, so
 * they are served to anyone in `admin` mode too; the page asks for the
 * admin key, and every call it makes is checked against it.
 */
export function createConsoleRoute(access: ConsoleAccess, assets: ConsoleAssets): ConsoleRoute {
  return (req, res, exchange) => {
    if (access === "off") return false;
    const path = pathOf(req);
    if (path !== CONSOLE_PATH && !path.startsWith(`${CONSOLE_PATH}/`)) return false;
    exchange.edge = "http";
    exchange.route = CONSOLE_PATH;
    if (req.method !== "GET" && req.method !== "HEAD") {
      exchange.code = "method_not_allowed";
      sendJsonError(res, 405, { message: "the console is read with GET", type: "invalid_request_error", param: null, code: "method_not_allowed" }, { allow: "GET, HEAD" });
      return true;
    }
    if (path === CONSOLE_PATH) {
      exchange.code = "ok";
      res.writeHead(308, { location: `${CONSOLE_PATH}/`, "content-length": "0" });
      res.end();
      return true;
    }
    const name = path.length > MAX_PATH_CHARS ? undefined : path.slice(CONSOLE_PATH.length + 1) || "index.html";
    const asset = name === undefined ? undefined : assets.get(name);
    if (!asset) {
      exchange.code = "not_found";
      const message = assets.size === 0 ? "the console is not built: run npm run build" : "not found";
      sendJsonError(res, assets.size === 0 ? 503 : 404, { message, type: "invalid_request_error", param: null, code: "not_found" });
      return true;
    }
    exchange.code = "ok";
    const headers: Record<string, string> = {
      ...SECURITY_HEADERS,
      "content-type": asset.contentType,
      etag: asset.etag,
      "cache-control": asset.immutable ? "public, max-age=31536000, immutable" : "no-cache",
      vary: "accept-encoding",
    };
    if (matches(headerOf(req, "if-none-match"), asset.etag)) {
      res.writeHead(304, headers);
      res.end();
      return true;
    }
    const gzip = asset.gzip && acceptsGzip(headerOf(req, "accept-encoding")) ? asset.gzip : undefined;
    const body = gzip ?? asset.body;
    res.writeHead(200, { ...headers, ...(gzip ? { "content-encoding": "gzip" } : {}), "content-length": String(body.length) });
    if (req.method === "HEAD") res.end();
    else res.end(body);
    return true;
  };
}
