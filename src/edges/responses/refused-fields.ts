import { quoteClientValue } from "../../core/client-text.js";
import { invalidField } from "./invalid-field.js";

/** Body fields this edge honours (some only with certain values, below). */
const SERVED = new Set([
  "model",
  "input",
  "instructions",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "text",
  "reasoning",
  "max_output_tokens",
  "temperature",
  "top_p",
  "metadata",
  "user",
  "safety_identifier",
  "prompt_cache_key",
  "service_tier",
  "truncation",
  "stream",
  "store",
  "include",
]);

const NO_STORAGE = "this gateway keeps no responses";

/**
 * Fields that need something this stateless gateway does not have, with
 * what to do instead. Each is refused only for a value that asks for it:
 * `store: false`, `background: false` and nulls are what the gateway does anyway.
 */
const REFUSED = new Map<string, { readonly refuses: (value: unknown) => boolean; readonly instead: string }>([
  ["previous_response_id", { refuses: (v) => v !== null, instead: `${NO_STORAGE}: send the whole conversation in input, earlier output items included` }],
  ["conversation", { refuses: (v) => v !== null, instead: `${NO_STORAGE} or conversations: send the whole conversation in input` }],
  ["store", { refuses: (v) => v === true, instead: `${NO_STORAGE}: omit store or set it to false, and send the whole conversation in input` }],
  ["background", { refuses: (v) => v === true, instead: `${NO_STORAGE}, which background mode needs: stream the response instead (stream: true)` }],
  ["prompt", { refuses: (v) => v !== null, instead: "stored prompt templates are not served here: send instructions and input instead" }],
  ["truncation", { refuses: (v) => v === "auto", instead: "this gateway does not truncate input: shorten the conversation yourself, or omit truncation" }],
]);

/**
 * Refuses, naming the field, what the gateway cannot honour: every body
 * field it does not serve (OpenAI ignores none of its own, so neither does
 * this edge: a caller would otherwise get an answer to a question it did
 * not ask), state it does not keep, and `include` entries it cannot fill.
 */
export function refuseUnservedFields(body: Readonly<Record<string, unknown>>): void {
  for (const [key, value] of Object.entries(body)) {
    const refused = REFUSED.get(key);
    if (refused) {
      if (value !== undefined && refused.refuses(value)) invalidField(key, refused.instead);
    } else if (!SERVED.has(key)) {
      invalidField(key, "not served on /v1/responses by this gateway: remove it");
    }
  }
  const include = body.include;
  if (Array.isArray(include)) {
    include.forEach((entry, i) => {
      if (entry !== "reasoning.encrypted_content") {
        invalidField(`include[${i}]`, `${typeof entry === "string" ? quoteClientValue(entry, 64) : "this entry"} is not served: only "reasoning.encrypted_content" is`);
      }
    });
  }
  const text = body.text;
  if (text !== null && typeof text === "object" && "verbosity" in text && (text as { verbosity?: unknown }).verbosity != null) {
    invalidField("text.verbosity", "not served by this gateway: remove it");
  }
}
