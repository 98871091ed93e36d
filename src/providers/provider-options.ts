import type { ChatRequest, ProviderKind } from "../core/chat-request.js";
import { GatewayError } from "../core/errors.js";

/**
 * Keys the caller's provider options may not set: the alias decides the
 * model (an alias is a policy the operator configured), and the pipeline
 * depends on a streamed answer.
 */
const RESERVED = new Set(["model", "stream", "stream_options"]);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Sets an own property; a "__proto__" key from JSON stays data and never reaches a prototype. */
function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function merge(base: Record<string, unknown>, extra: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(base)) define(out, key, value);
  for (const [key, value] of Object.entries(extra)) {
    const current = Object.hasOwn(out, key) ? out[key] : undefined;
    define(out, key, isPlainObject(current) && isPlainObject(value) ? merge(current, value) : value);
  }
  return out;
}

/**
 * The escape hatch: the caller's JSON object for this provider kind merged
 * into the request body (objects key by key, anything else replaces).
 * Unchecked beyond the reserved keys: a wrong field is the provider's error.
 */
export function withProviderOptions(body: Record<string, unknown>, request: ChatRequest, kind: ProviderKind): Record<string, unknown> {
  const options = request.providerOptions?.[kind];
  if (!options) return body;
  for (const key of Object.keys(options)) {
    if (RESERVED.has(key)) {
      const field = `provider_options.${kind}.${key}`;
      throw new GatewayError("invalid_request", `${field}: set by the gateway, not by provider options`, { field });
    }
  }
  return merge(body, options);
}
