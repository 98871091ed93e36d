import { type ErrorCode, type GatewayError, toGatewayError } from "../../core/errors.js";
import type { Exchange } from "../../http/exchange.js";
import { sendJsonError } from "../../http/json-error.js";
import type { AnyResponse } from "../../http/node-http.js";

/** The HTTP status for each gateway error (docs/streams.md, "Error mapping"). */
export function httpStatus(code: ErrorCode): number {
  switch (code) {
    case "invalid_request":
    case "upstream_rejected":
    case "failed_precondition":
      return 400;
    case "unknown_model":
    case "upstream_not_found":
    case "not_found":
      return 404;
    case "unauthenticated":
      return 401;
    case "permission_denied":
      return 403;
    case "already_exists":
    case "not_resumable":
      return 409;
    case "payload_too_large":
      return 413;
    case "request_timeout":
      return 408;
    case "budget_exceeded":
      return 402;
    case "upstream_rate_limited":
    case "upstream_quota_exhausted":
    case "overloaded":
    case "rate_limited":
      return 429;
    case "canceled":
      return 499;
    case "internal":
      return 500;
    case "upstream_auth":
    case "upstream_unavailable":
    case "upstream_protocol":
    case "upstream_stream_error":
      return 502;
    case "shutting_down":
    case "circuit_open":
    case "store_unavailable":
      return 503;
    case "deadline_exceeded":
    case "upstream_timeout":
      return 504;
  }
}

function errorType(status: number, code: ErrorCode): string {
  if (code === "upstream_quota_exhausted" || code === "budget_exceeded") return "insufficient_quota";
  if (status === 429) return "rate_limit_error";
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

/** Protobuf-style field paths as the OpenAI request names them. */
const PARAM: Record<string, string> = {
  "sampling.temperature": "temperature",
  "sampling.top_p": "top_p",
  "sampling.max_tokens": "max_tokens",
  "sampling.stop": "stop",
  "sampling.seed": "seed",
  "tool_choice.function_name": "tool_choice",
  "metadata.labels": "metadata",
  "metadata.provider_metadata": "metadata",
  "sampling.presence_penalty": "presence_penalty",
  "sampling.frequency_penalty": "frequency_penalty",
  "sampling.logit_bias": "logit_bias",
  "reasoning.effort": "reasoning_effort",
  "tools.strict": "tools[].function.strict",
};

/** `tools[3].parameters` (canonical) → `tools[3].function.parameters` (OpenAI). */
export function openAiParam(field: string): string {
  const exact = PARAM[field];
  if (exact) return exact;
  return field.replace(/^tools\[(\d+)\]\.(name|parameters|description)/, "tools[$1].function.$2");
}

/** Our codes where OpenAI has its own word for the same thing (SDKs and retry logic branch on these). */
function openAiCode(code: ErrorCode): string {
  switch (code) {
    case "unknown_model":
      return "model_not_found";
    case "upstream_rate_limited":
    case "rate_limited":
      return "rate_limit_exceeded";
    case "upstream_quota_exhausted":
      return "insufficient_quota";
    case "unauthenticated":
      return "invalid_api_key";
    default:
      return code;
  }
}

export interface OpenAiError {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: { error: { message: string; type: string; param: string | null; code: string | null } };
}

/**
 * OpenAI's error shape for any failure: `{"error": {message, type, param,
 * code}}`, with the status and Retry-After the SDKs act on. Only the safe
 * message of a GatewayError is ever used.
 */
export function toOpenAiError(reason: unknown): OpenAiError {
  const error: GatewayError = toGatewayError(reason);
  // A spent budget is 402 unless the operator kept the 429 of old (auth.budgetExceededStatus).
  const status = error.budget?.httpStatus ?? httpStatus(error.code);
  const param = error.field === undefined ? null : openAiParam(error.field);
  let message = error.message;
  // Messages start with the field(s) at fault ("a: …" or "a, b: …"): say them the OpenAI way.
  const colon = message.indexOf(": ");
  const fields = colon > 0 ? message.slice(0, colon).split(", ") : [];
  if (error.field !== undefined && fields.includes(error.field)) message = `${fields.map(openAiParam).join(", ")}${message.slice(colon)}`;
  const headers: Record<string, string> = {};
  if (error.retryAfterMs !== undefined) {
    headers["retry-after"] = String(Math.ceil(error.retryAfterMs / 1000));
    headers["retry-after-ms"] = String(error.retryAfterMs);
  }
  if (error.budget) headers["sluice-budget-level"] = error.budget.level;
  if (error.budget?.reset !== undefined) headers["sluice-budget-reset"] = error.budget.reset;
  return { status, headers, body: { error: { message, type: errorType(status, error.code), param, code: openAiCode(error.code) } } };
}

/** Sends `reason` as an OpenAI error response, with `headers` (the key's quota) beside its own; the access line gets its code. */
export function sendOpenAiError(res: AnyResponse, exchange: Exchange, reason: unknown, headers: Readonly<Record<string, string>> = {}): void {
  exchange.code = toGatewayError(reason).code;
  const { status, headers: own, body } = toOpenAiError(reason);
  sendJsonError(res, status, body.error, { ...headers, ...own });
}
