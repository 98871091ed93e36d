import { GatewayError } from "../core/errors.js";
import { scanJson } from "../core/json-scan.js";
import type { StructureLimits } from "../core/structure-limits.js";
import type { AnyRequest } from "./node-http.js";
import { type BodyLimits, readBody } from "./read-body.js";

const utf8 = new TextDecoder();

/**
 * A request body's JSON, counted and measured before it is parsed: the
 * cost of JSON.parse and of validation grows with the number of values,
 * and a hostile body must not buy that time (core/json-scan.ts). Every
 * HTTP edge reads its body through this, with the same errors.
 */
export function parseJsonBody(raw: Uint8Array, limits: StructureLimits): unknown {
  scanJson(raw, limits);
  try {
    return JSON.parse(utf8.decode(raw)) as unknown;
  } catch {
    throw new GatewayError("invalid_request", "request body is not valid JSON");
  }
}

/** The request's body, bounded in bytes while it is read, then as `parseJsonBody`. */
export async function readJsonBody(req: AnyRequest, limits: BodyLimits & StructureLimits): Promise<unknown> {
  return parseJsonBody(await readBody(req, limits), limits);
}
