import { quoteClientValue } from "../../core/client-text.js";
import { invalidField } from "./invalid-field.js";
import { RESPONSES_FIELDS, STATE_FIELDS } from "./responses-fields.js";

/** The top-level rows of the table by field name (rows naming headers or items are documentation only). */
const ROWS = new Map(RESPONSES_FIELDS.filter((rule) => /^[a-z_]+$/.test(rule.field)).map((rule) => [rule.field, rule]));

/**
 * Sorts the body's fields by the edge's table (responses-fields.ts):
 * refuses, naming the field, what the gateway cannot honour (a field in no
 * row: OpenAI ignores none of its own, so neither does this edge, or a
 * caller would get an answer to a question it did not ask; state it does
 * not keep; `include` entries it cannot fill), and returns the `dropped`
 * fields that are set, for `sluice-dropped-params`. `stateful`: the
 * gateway keeps responses (config responses.store); without it the state
 * fields (STATE_FIELDS) are refused by name.
 */
export function refuseUnservedFields(body: Readonly<Record<string, unknown>>, stateful = false): string[] {
  const dropped: string[] = [];
  for (const [key, value] of Object.entries(body)) {
    const stateRule = stateful ? undefined : STATE_FIELDS.get(key);
    if (stateRule && value !== undefined && stateRule.refusedWhen(value)) invalidField(key, stateRule.why);
    const rule = ROWS.get(key);
    if (rule === undefined) invalidField(key, "not served on /v1/responses by this gateway: remove it");
    else if (rule.treatment === "refused") {
      // A background response is kept (background-runs.ts): `store: true` beside it is what it needs.
      if (key === "store" && body.background === true) continue;
      if (value !== undefined && (rule.refusedWhen ?? (() => true))(value)) invalidField(key, rule.why);
    } else if (rule.treatment === "dropped" && value !== null && value !== undefined) dropped.push(key);
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
  return dropped;
}
