import { type ErrorCode, GatewayError } from "../../core/errors.js";
import type { UpstreamFailure, UpstreamTarget } from "../provider.js";
import { errorFromStatus, sanitizeUpstreamMessage } from "../upstream-errors.js";

/**
 * Bedrock's exceptions inside a stream (`:exception-type`), by what they
 * mean for our clients, as the same failure as an HTTP status would be.
 */
const STREAM_EXCEPTIONS: Readonly<Record<string, readonly [ErrorCode, string]>> = {
  throttlingException: ["upstream_rate_limited", "is rate limiting requests"],
  serviceQuotaExceededException: ["upstream_rate_limited", "is rate limiting requests"],
  validationException: ["upstream_rejected", "rejected the request"],
  accessDeniedException: ["upstream_auth", "rejected the gateway's credentials"],
  resourceNotFoundException: ["upstream_not_found", "does not serve the model"],
  modelStreamErrorException: ["upstream_stream_error", "reported an error mid-stream"],
  modelTimeoutException: ["upstream_timeout", "timed out"],
  serviceUnavailableException: ["upstream_unavailable", "is unavailable"],
  internalServerException: ["upstream_unavailable", "failed"],
};

/** An exception event (or an event of an unknown type) in a Bedrock stream as a GatewayError; the provider's message stays out. */
export function bedrockStreamError(provider: string, type: string, _message: unknown): GatewayError {
  const known = Object.hasOwn(STREAM_EXCEPTIONS, type) ? STREAM_EXCEPTIONS[type] : undefined;
  const [code, what] = known ?? ["upstream_stream_error", "reported an error mid-stream"];
  return new GatewayError(code, `provider ${provider} ${what} (mid-stream ${type || "error"})`, { provider, cause: new Error(type || "error") });
}

/**
 * A failed Bedrock response: `{"message": "…"}` with the exception's name
 * in `x-amzn-errortype`. Mapped by status like every provider's
 * (upstream-errors.ts); the message is relayed for the client's own faults.
 */
export function bedrockErrorFromResponse(failure: UpstreamFailure, target: UpstreamTarget): GatewayError {
  let message: string | undefined;
  try {
    const body = JSON.parse(failure.body) as { message?: unknown; Message?: unknown };
    const text = body.message ?? body.Message;
    if (typeof text === "string") message = text;
  } catch {
    // Not JSON (a proxy's page): nothing worth relaying.
  }
  return errorFromStatus(failure.status, target, failure, message ? sanitizeUpstreamMessage(message, target) : undefined);
}
