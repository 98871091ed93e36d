import { GatewayError } from "../../core/errors.js";
import { scanJson } from "../../core/json-scan.js";
import type { StructureLimits } from "../../core/structure-limits.js";

const utf8 = new TextDecoder();

/**
 * A request body's JSON, counted and measured before it is parsed: parsing
 * and validation cost grows with the number of values, and a hostile body
 * must not buy that time (core/json-scan.ts). The same limits as the OpenAI
 * facade, with the same errors. Edge-neutral; it lives here until the shared
 * call layer has its own.
 */
export function requestJson(raw: Uint8Array, limits: StructureLimits): unknown {
  scanJson(raw, limits);
  try {
    return JSON.parse(utf8.decode(raw)) as unknown;
  } catch {
    throw new GatewayError("invalid_request", "request body is not valid JSON");
  }
}
