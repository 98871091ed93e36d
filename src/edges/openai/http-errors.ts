import { type ErrorCode, type GatewayError, toGatewayError } from "../../core/errors.js";

/** The HTTP status for each gateway error (README, "Error mapping"). */
export function httpStatus(code: ErrorCode): number {
  switch (code) {
    case "invalid_request":
    case "upstream_rejected":
      return 400;
    case "unknown_model":
    case "upstream_not_found":
      return 404;
    case "payload_too_large":
      return 413;
    case "request_timeout":
      return 408;
    case "upstream_rate_limited":
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
      return 503;
    case "deadline_exceeded":
    case "upstream_timeout":
      return 504;
  }
}

function errorType(status: number): string {
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
};

/** `tools[3].parameters` (canonical) → `tools[3].function.parameters` (OpenAI). */
function openAiParam(field: string): string {
  const exact = PARAM[field];
  if (exact) return exact;
  return field.replace(/^tools\[(\d+)\]\.(name|parameters|description)/, "tools[$1].function.$2");
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
  const status = httpStatus(error.code);
  const param = error.field === undefined ? null : openAiParam(error.field);
  let message = error.message;
  if (error.field !== undefined && param !== error.field && message.startsWith(`${error.field}: `)) {
    message = `${param}: ${message.slice(error.field.length + 2)}`;
  }
  const headers: Record<string, string> = {};
  if (error.retryAfterMs !== undefined) {
    headers["retry-after"] = String(Math.ceil(error.retryAfterMs / 1000));
    headers["retry-after-ms"] = String(error.retryAfterMs);
  }
  const code = error.code === "unknown_model" ? "model_not_found" : error.code;
  return { status, headers, body: { error: { message, type: errorType(status), param, code } } };
}
