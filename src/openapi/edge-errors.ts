import type { ErrorShape } from "./http-operation.js";
import { schemaRef } from "./json-schema.js";

const loose = (description: string, example: unknown) => ({ description, content: { "application/json": { schema: { type: "object" }, example } } });

/** Each error body by name, as a reusable response of the document. */
export const EDGE_ERRORS = {
  ConnectError: {
    description:
      "A Connect error. The HTTP status follows the code: invalid_argument, failed_precondition, out_of_range 400; unauthenticated 401; permission_denied 403; not_found 404; already_exists, aborted 409; resource_exhausted 429; canceled 499; unimplemented 501; unavailable 503; deadline_exceeded 504; unknown, internal, data_loss 500.",
    content: { "application/json": { schema: schemaRef("sluice.connect.Error") } },
  },
  OpenAiError: loose("OpenAI's error body; the status is the error's (docs/streams.md, error mapping).", { error: { message: "model: required", type: "invalid_request_error", param: "model", code: "invalid_request" } }),
  AnthropicError: loose("Anthropic's error body.", { type: "error", error: { type: "invalid_request_error", message: "max_tokens: required" } }),
  GoogleError: loose("Google's error body.", { error: { code: 400, message: "contents: required", status: "INVALID_ARGUMENT" } }),
  JsonRpcError: loose("A JSON-RPC error object, or an HTTP error before one could be read.", { jsonrpc: "2.0", id: null, error: { code: -32600, message: "invalid request" } }),
  PlainError: loose("The gateway's own JSON error.", { error: { message: "not found", type: "invalid_request_error", param: null, code: "not_found" } }),
} as const;

/** Which response an operation's failures are, by the body its edge writes. */
export const ERROR_RESPONSES: Readonly<Record<ErrorShape, keyof typeof EDGE_ERRORS>> = {
  openai: "OpenAiError",
  anthropic: "AnthropicError",
  google: "GoogleError",
  jsonrpc: "JsonRpcError",
  plain: "PlainError",
};
