import type { JsonSchema } from "./json-schema.js";
import type { Security } from "./security.js";

/** A query or header parameter the route reads. */
export interface Parameter {
  readonly name: string;
  readonly in: "query" | "header";
  readonly description: string;
  readonly schema?: JsonSchema;
}

/** Which error body an operation answers a failure with: each edge speaks its own API's. */
export type ErrorShape = "openai" | "anthropic" | "google" | "jsonrpc" | "plain";

/**
 * One HTTP route of the port as the document describes it. `path` is an
 * OpenAPI template whose `{name}` segments match the route table's `{id}`
 * segments (a Gemini segment, `{model}:generateContent`, is one `{id}`).
 */
export interface HttpOperation {
  readonly method: "GET" | "HEAD" | "POST" | "DELETE";
  readonly path: string;
  readonly tag: string;
  readonly summary: string;
  readonly description?: string;
  readonly security: Security;
  /** The body the route reads; `loose` says how much of it is described (absent: the whole of it, as the edge checks it). */
  readonly body?: { readonly schema: JsonSchema; readonly contentType?: string; readonly loose?: string; readonly required?: boolean };
  /** Query and header parameters (path parameters come from `path`). */
  readonly parameters?: readonly Parameter[];
  /** What a success is: its content types (none: no body) and a sentence. */
  readonly answer: { readonly description: string; readonly contentTypes: readonly string[]; readonly status?: string };
  readonly error: ErrorShape;
}

/** `{"type": "string"}` and friends, to keep the tables short. */
export const str = (description?: string): JsonSchema => ({ type: "string", ...(description ? { description } : {}) });
export const int = (description?: string): JsonSchema => ({ type: "integer", ...(description ? { description } : {}) });
export const obj = (properties: Record<string, JsonSchema>, required: readonly string[] = [], extra: JsonSchema = {}): JsonSchema => ({
  type: "object",
  properties,
  ...(required.length > 0 ? { required } : {}),
  ...extra,
});
/** Any JSON value (a field described by name only). */
export const anyValue = (description: string): JsonSchema => ({ description });

export const JSON_TYPE = "application/json";
export const SSE_TYPE = "text/event-stream";
