import { GatewayError } from "../core/errors.js";
import { scanJson } from "../core/json-scan.js";
import type { StructureLimits } from "../core/structure-limits.js";
import type { AnyRequest } from "./node-http.js";
import { type BodyLimits, readBody } from "./read-body.js";

/**
 * A JSON request body, within the size, count and depth limits: the bytes
 * are bounded while they are read, then counted and measured before
 * JSON.parse, whose cost (and validation's) grows with the number of
 * values, so a hostile body never buys that time.
 */
export async function readJsonBody(req: AnyRequest, limits: BodyLimits & StructureLimits): Promise<unknown> {
  const raw = await readBody(req, limits);
  scanJson(raw, limits);
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    throw new GatewayError("invalid_request", "request body is not valid JSON");
  }
}
