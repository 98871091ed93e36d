import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema, QuotaFailureSchema, RetryInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { type ErrorCode, GatewayError, toGatewayError } from "../../core/errors.js";

/** The gRPC status for each gateway error (docs/streams.md, "Error mapping"). */
export function grpcCode(code: ErrorCode): Code {
  switch (code) {
    case "invalid_request":
    case "upstream_rejected":
      return Code.InvalidArgument;
    case "payload_too_large":
    case "overloaded":
    case "rate_limited":
    case "budget_exceeded":
      return Code.ResourceExhausted;
    case "unauthenticated":
      return Code.Unauthenticated;
    case "permission_denied":
      return Code.PermissionDenied;
    case "already_exists":
      return Code.AlreadyExists;
    case "not_resumable":
    case "failed_precondition":
      return Code.FailedPrecondition;
    case "not_found":
      return Code.NotFound;
    case "request_timeout":
      return Code.DeadlineExceeded;
    case "unknown_model":
    case "upstream_not_found":
      return Code.NotFound;
    case "canceled":
      return Code.Canceled;
    case "deadline_exceeded":
      return Code.DeadlineExceeded;
    case "upstream_rate_limited":
    case "upstream_quota_exhausted":
      return Code.ResourceExhausted;
    case "shutting_down":
    case "circuit_open":
    case "store_unavailable":
    case "upstream_unavailable":
    case "upstream_timeout":
    case "upstream_stream_error":
      return Code.Unavailable;
    case "upstream_auth":
    case "upstream_protocol":
    case "internal":
      return Code.Internal;
  }
}

/**
 * Standard error details, so generated clients can act without parsing the
 * message: `google.rpc.ErrorInfo` always (reason = the gateway's error code
 * in upper case, domain `sluice`), `google.rpc.RetryInfo` when the client
 * should wait before retrying, and `google.rpc.QuotaFailure` naming the
 * level whose budget is spent. Over gRPC they travel in
 * `grpc-status-details-bin`, over Connect in the error's `details`.
 */
/** One detail as ConnectError's constructor takes it (connect does not export the type). */
type OutgoingDetail = NonNullable<ConstructorParameters<typeof ConnectError>[3]>[number];

function errorDetails(error: GatewayError) {
  const metadata: Record<string, string> = {};
  if (error.provider !== undefined) metadata.provider = error.provider;
  if (error.field !== undefined) metadata.field = error.field.slice(0, 256);
  if (error.budget !== undefined) metadata.level = error.budget.level;
  const details: OutgoingDetail[] = [{ desc: ErrorInfoSchema, value: { reason: error.code.toUpperCase(), domain: "sluice", metadata } }];
  if (error.budget !== undefined) details.push({ desc: QuotaFailureSchema, value: { violations: [{ subject: error.budget.level, description: capMessage(error.message) }] } });
  if (error.retryAfterMs === undefined) return details;
  const ms = Math.max(0, Math.ceil(error.retryAfterMs));
  const retryDelay = { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 };
  return [...details, { desc: RetryInfoSchema, value: { retryDelay } }];
}

/**
 * What a gRPC/Connect client sees for any failure: the safe message, the
 * mapped code, standard error details, and `retry-after` (seconds) in
 * trailers when the client should wait. The original error stays in `cause`
 * for logs only.
 */
export function toConnectError(reason: unknown): ConnectError {
  if (reason instanceof ConnectError) return reason;
  const error = toGatewayError(reason);
  const metadata = new Headers();
  if (error.retryAfterMs !== undefined) metadata.set("retry-after", String(Math.ceil(error.retryAfterMs / 1000)));
  if (error.budget !== undefined) metadata.set("sluice-budget-level", error.budget.level);
  if (error.budget?.reset !== undefined) metadata.set("sluice-budget-reset", error.budget.reset);
  return new ConnectError(capMessage(error.message), grpcCode(error.code), metadata, errorDetails(error), error);
}

/**
 * Longest status message sent. grpc-message travels in a header, and after
 * percent-encoding (up to 3 bytes per byte) this keeps every status well
 * inside the 8 KiB header lists that clients and proxies accept.
 */
const MAX_MESSAGE_CHARS = 1024;

function capMessage(message: string): string {
  return message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS)}…` : message;
}

/**
 * A client that resets its stream this close to its deadline gave up because
 * of it. The server's clock starts when the request arrives, after the
 * client's (connection setup, queueing), so the two deadlines differ by
 * milliseconds to tens of milliseconds on a loaded machine.
 */
const DEADLINE_SLACK_MS = 50;

/**
 * What an aborted Connect handler signal means for the pipeline: the client's
 * deadline passed, or the client went away. Clients enforce their deadline
 * too, and their reset can beat the server's own timer, so a cancel at the
 * deadline counts as the deadline.
 */
export function abortReason(reason: unknown, remainingMs: number | undefined): GatewayError {
  const atDeadline = remainingMs !== undefined && remainingMs <= DEADLINE_SLACK_MS;
  if (reason instanceof GatewayError && !(reason.code === "canceled" && atDeadline)) return reason;
  const connect = ConnectError.from(reason);
  if (connect.code === Code.DeadlineExceeded || atDeadline) {
    return new GatewayError("deadline_exceeded", "the client's deadline was exceeded", { cause: reason });
  }
  return new GatewayError("canceled", "the client cancelled the request", { cause: reason });
}
