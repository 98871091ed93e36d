import { clipClientValue } from "./client-text.js";
import { GatewayError } from "./errors.js";

/**
 * How much structure one request may carry. Decoding cost grows with the
 * number of elements, not bytes: 4 MiB of one-character content parts took
 * protobuf-es almost a second. These limits are checked by cheap scans of
 * the raw bytes before any decoder runs, so a hostile request costs a bounded
 * amount of event-loop time however it is shaped.
 */
export interface StructureLimits {
  /** Fields, list items, map entries and JSON values in one request body. */
  readonly maxRequestElements: number;
  /** Nesting of JSON objects and arrays (tool schemas, Struct values). */
  readonly maxJsonDepth: number;
}

/** Room for the request's own structure above the JSON values it carries (body → tools → tool → function → parameters). */
export const STRUCTURAL_DEPTH = 8;

export function tooManyElements(limit: number): GatewayError {
  return new GatewayError("payload_too_large", `request has more than ${limit} elements (limits.maxRequestElements)`);
}

export function tooDeep(path: string, limit: number): GatewayError {
  const field = clipClientValue(path || "body");
  return new GatewayError("invalid_request", `${field}: nested deeper than ${limit} levels`, { field });
}

/** Appends one path segment: a key (`.name`) or an index (`[3]`). */
export function pathSegment(path: string, segment: string | number): string {
  if (typeof segment === "number") return `${path}[${segment}]`;
  return path === "" ? segment : `${path}.${segment}`;
}
