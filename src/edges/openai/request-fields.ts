import { clipClientValue } from "../../core/client-text.js";
import { GatewayError } from "../../core/errors.js";
import { fieldsTreated } from "../../core/field-rules.js";
import { CHAT_FIELDS } from "./chat-fields.js";

/**
 * Top-level fields the official SDK declares (openai v6,
 * `ChatCompletionCreateParams`) that the facade does not act on: the
 * `dropped` rows of chat-fields.ts. A request may carry them, since SDKs
 * and frameworks send them, and the answer names the ones that were set in
 * `sluice-dropped-params`, so a caller can tell it got a plain text answer
 * without audio, a prediction, web search or a stored completion.
 * test/openai-request-fields.test.ts checks this list against the SDK's type.
 */
export const UNHONOURED_FIELDS: ReadonlySet<string> = fieldsTreated(CHAT_FIELDS, "dropped");

/** Unknown fields named in one refusal; the rest are counted. */
const NAMED_AT_MOST = 5;

/**
 * Sorts a body's top-level fields. Those in `honoured` pass; those the SDK
 * declares but the facade does not act on are returned when set (null is
 * OpenAI's "not set"); anything else fails the request with a 400 naming
 * it, so a field the caller believes in (an `mcp_servers`, a misspelt
 * `temprature`) is never ignored in silence.
 */
export function droppedFields(body: Readonly<Record<string, unknown>>, honoured: ReadonlySet<string>): string[] {
  const dropped: string[] = [];
  const unknown: string[] = [];
  for (const [field, value] of Object.entries(body)) {
    if (honoured.has(field)) continue;
    if (!UNHONOURED_FIELDS.has(field)) unknown.push(field);
    else if (value !== null && value !== undefined) dropped.push(field);
  }
  if (unknown.length === 0) return dropped;
  const named = unknown.slice(0, NAMED_AT_MOST).map((field) => clipClientValue(field, 64));
  const more = unknown.length > NAMED_AT_MOST ? ` (and ${unknown.length - NAMED_AT_MOST} more)` : "";
  throw new GatewayError("invalid_request", `${named.join(", ")}: unrecognized request argument${unknown.length > 1 ? "s" : ""}${more}; not a Chat Completions parameter`, { field: named[0]! });
}
