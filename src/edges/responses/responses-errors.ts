import { GatewayError, toGatewayError } from "../../core/errors.js";
import { type OpenAiError, toOpenAiError } from "../openai/http-errors.js";

/** Canonical field paths (validation, the pipeline) as the Responses request names them. */
const PARAM = new Map([
  ["sampling.temperature", "temperature"],
  ["sampling.top_p", "top_p"],
  ["sampling.max_tokens", "max_output_tokens"],
  ["tool_choice.function_name", "tool_choice.name"],
  ["metadata.labels", "metadata"],
  ["metadata.provider_metadata", "metadata"],
  ["response_format", "text.format"],
  ["response_format.json_schema.name", "text.format.name"],
  ["response_format.json_schema.schema", "text.format.schema"],
  ["tools.strict", "tools[].strict"],
]);

/**
 * A canonical field path in Responses words. Tool paths need no change
 * (Responses tools are flat: `tools[3].parameters`); paths already in
 * Responses words pass through. `messages[…]` paths depend on how a request's
 * items became messages: the decoded request's own `param` maps those.
 */
export function responsesParam(field: string): string {
  return PARAM.get(field) ?? field;
}

/**
 * `error` with its field (and the field names its message starts with,
 * "a: …" or "a, b: …") in Responses words; the error itself when it names
 * no field.
 */
export function inResponsesWords(error: GatewayError, param: (field: string) => string = responsesParam): GatewayError {
  if (error.field === undefined) return error;
  const field = param(error.field);
  let message = error.message;
  const colon = message.indexOf(": ");
  const fields = colon > 0 ? message.slice(0, colon).split(", ") : [];
  if (fields.includes(error.field)) message = `${fields.map(param).join(", ")}${message.slice(colon)}`;
  if (field === error.field && message === error.message) return error;
  return new GatewayError(error.code, message, { cause: error.cause, field, provider: error.provider, retryAfterMs: error.retryAfterMs, upstreamStatus: error.upstreamStatus });
}

/**
 * The Responses API's error response: the same `{"error": {message, type,
 * param, code}}` body, status and Retry-After as the OpenAI edge (one
 * mapping of codes, `toOpenAiError`), with the field named the Responses
 * way. `param` is the decoded request's own mapping when there is one.
 */
export function toResponsesError(reason: unknown, param: (field: string) => string = responsesParam): OpenAiError {
  const error = inResponsesWords(toGatewayError(reason), param);
  if (error.field === undefined) return toOpenAiError(error);
  // The API's own code for a chain it cannot continue (stored-input.ts), which SDKs and agents branch on.
  const code = error.code === "not_found" && error.field === "previous_response_id" ? "previous_response_not_found" : undefined;
  // Without its field, toOpenAiError applies no Chat Completions renaming: the names are this edge's already.
  const base = toOpenAiError(new GatewayError(error.code, error.message, { cause: error.cause, provider: error.provider, retryAfterMs: error.retryAfterMs, upstreamStatus: error.upstreamStatus }));
  return { ...base, body: { error: { ...base.body.error, param: error.field, ...(code ? { code } : {}) } } };
}
