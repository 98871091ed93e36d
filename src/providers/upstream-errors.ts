import { type ErrorCode, GatewayError } from "../core/errors.js";
import type { UpstreamFailure, UpstreamTarget } from "./provider.js";

/** Reads Retry-After (seconds or HTTP date) or OpenAI's retry-after-ms, in milliseconds. */
export function retryAfterMs(headers: UpstreamFailure["headers"], nowMs = Date.now()): number | undefined {
  const ms = headers["retry-after-ms"];
  if (typeof ms === "string" && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const value = headers["retry-after"];
  if (typeof value !== "string" || value.trim() === "") return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

const KEY_LIKE = /\b(sk|pk|rk|key|AIza)[-_A-Za-z0-9]{8,}/g;

/**
 * Makes a provider's own error text safe to relay: no credential (the
 * configured key, or anything shaped like one), no control characters, and
 * short. Used only for refusals the client can act on (e.g. context too long).
 */
export function sanitizeUpstreamMessage(message: string, target: UpstreamTarget): string {
  let text = message.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
  const key = target.provider.apiKey?.reveal();
  if (key) text = text.split(key).join("[redacted]");
  text = text.replace(KEY_LIKE, "[redacted]");
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/**
 * The gateway's deliberate mapping of provider HTTP statuses (see
 * docs/streams.md, "Error mapping"). Shared by every adapter: providers differ in their error
 * bodies, not in what a status means for our clients. `detail` is the
 * provider's message, already sanitized, relayed only for client-side faults.
 */
export function errorFromStatus(status: number, target: UpstreamTarget, failure: UpstreamFailure, detail?: string): GatewayError {
  const provider = target.provider.name;
  const base = { provider, upstreamStatus: status, cause: new Error(`upstream status ${status}`) };
  const suffix = detail ? `: ${detail}` : "";
  if (status === 401 || status === 403) {
    return new GatewayError("upstream_auth", `provider ${provider} rejected the gateway's credentials (status ${status})`, base);
  }
  if (status === 404) {
    return new GatewayError("upstream_not_found", `provider ${provider} does not serve model ${target.model} (status 404)${suffix}`, base);
  }
  if (status === 408) {
    return new GatewayError("upstream_timeout", `provider ${provider} timed out (status 408)`, base);
  }
  if (status === 429) {
    const after = retryAfterMs(failure.headers);
    return new GatewayError("upstream_rate_limited", `provider ${provider} is rate limiting requests (status 429)`, {
      ...base,
      ...(after === undefined ? {} : { retryAfterMs: after }),
    });
  }
  if (status >= 400 && status < 500) {
    return new GatewayError("upstream_rejected", `provider ${provider} rejected the request (status ${status})${suffix}`, base);
  }
  const after = retryAfterMs(failure.headers);
  return new GatewayError("upstream_unavailable", `provider ${provider} failed (status ${status})`, {
    ...base,
    ...(after === undefined ? {} : { retryAfterMs: after }),
  });
}

/**
 * The provider's own message from an error body, wherever it puts it: OpenAI
 * and Gemini `{"error": {"message"}}`, Anthropic `{"type": "error", "error":
 * {"message"}}`, some compatible servers `{"error": "text"}`.
 */
function providerMessage(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string };
    if (typeof parsed.error === "string") return parsed.error;
    if (typeof parsed.error?.message === "string") return parsed.error.message;
  } catch {
    // Not JSON (a proxy's HTML page, say): no detail worth relaying.
  }
  return undefined;
}

/** A failed upstream response as a GatewayError, for every provider. */
export function errorFromResponse(failure: UpstreamFailure, target: UpstreamTarget): GatewayError {
  const message = providerMessage(failure.body);
  return errorFromStatus(failure.status, target, failure, message ? sanitizeUpstreamMessage(message, target) : undefined);
}

/** Error classes providers put in in-band error events, by what they mean for our clients. */
const IN_BAND_CLASSES: ReadonlyArray<[ReadonlySet<string>, ErrorCode, string]> = [
  [new Set(["rate_limit_exceeded", "rate_limit_error", "RESOURCE_EXHAUSTED", "requests", "tokens"]), "upstream_rate_limited", "is rate limiting requests"],
  [new Set(["insufficient_quota", "billing_error"]), "upstream_quota_exhausted", "reports the gateway's quota exhausted"],
  [new Set(["authentication_error", "invalid_api_key", "permission_error", "UNAUTHENTICATED", "PERMISSION_DENIED"]), "upstream_auth", "rejected the gateway's credentials"],
  [new Set(["invalid_request_error", "request_too_large", "INVALID_ARGUMENT", "FAILED_PRECONDITION"]), "upstream_rejected", "rejected the request"],
  [new Set(["not_found_error", "model_not_found", "NOT_FOUND"]), "upstream_not_found", "does not serve the model"],
];

/**
 * An error event inside a stream, mapped by the class the provider gave it
 * (OpenAI `code`/`type`, Anthropic `error.type`, Gemini `status`): a rate
 * limit is a rate limit whether it came as a 429 or mid-stream. Classes we
 * do not know (overloaded, server errors) stay UNAVAILABLE.
 */
export function errorFromInBand(provider: string, classes: readonly unknown[]): GatewayError {
  const names = classes.filter((c): c is string => typeof c === "string" && c !== "");
  for (const [set, code, what] of IN_BAND_CLASSES) {
    const name = names.find((n) => set.has(n));
    if (name) return new GatewayError(code, `provider ${provider} ${what} (mid-stream ${name})`, { provider, cause: new Error(name) });
  }
  return new GatewayError("upstream_stream_error", `provider ${provider} reported an error mid-stream`, { provider, cause: new Error(names[0] ?? "error") });
}
