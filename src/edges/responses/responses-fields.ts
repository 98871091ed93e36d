import type { FieldTable } from "../../core/field-rules.js";

const NO_STORAGE = "this gateway keeps no responses";
const set = (v: unknown): boolean => v !== null;

/**
 * Fields honoured only where the gateway keeps responses (config
 * responses.store): with it off they are refused by name, for the values
 * given. `item_reference` items are refused by the input decoder.
 */
export const STATE_FIELDS: ReadonlyMap<string, { readonly why: string; readonly refusedWhen: (value: unknown) => boolean }> = new Map([
  ["store", { why: `${NO_STORAGE}: omit store or set it to false, and send the whole conversation in input`, refusedWhen: (v: unknown) => v === true }],
  ["previous_response_id", { why: `${NO_STORAGE}: send the whole conversation in input, earlier output items included`, refusedWhen: (v: unknown) => v !== null }],
]);

/**
 * `POST /v1/responses`: what the edge does with each body field (and the
 * headers Codex sends). refused-fields.ts reads the top-level rows: a body
 * field in no row is refused by name, a `dropped` one is named in
 * `sluice-dropped-params`, a `refused` one fails with its `why` for the
 * values `refusedWhen` names. Rows whose field is not a plain name
 * (`input[] role developer`) are documentation only.
 */
export const RESPONSES_FIELDS: FieldTable = [
  { field: "model", treatment: "honoured", why: "the alias that routes the request." },
  { field: "input", treatment: "honoured", why: "messages, function calls and their outputs, reasoning items this gateway issued." },
  { field: "input[] role developer", treatment: "honoured", why: "a system message, as OpenAI treats it for models without a developer role." },
  { field: "instructions", treatment: "honoured", why: "the first system message." },
  { field: "tools", treatment: "honoured", why: "function tools; tool_choice forcing a tool that is not declared is refused." },
  { field: "tool_choice", treatment: "honoured", why: "auto, none, required or one function." },
  { field: "parallel_tool_calls", treatment: "honoured", why: "false is sent where a target takes it, and refused by name where it cannot be kept." },
  { field: "text", treatment: "honoured", why: "text.format: text, json_object or a JSON schema (refused by name where no target can enforce it); text.verbosity is refused: it changes the answer." },
  { field: "reasoning", treatment: "honoured", why: "effort is the canonical reasoning effort; summary asks for the reasoning text the answer carries as summary items." },
  { field: "max_output_tokens", treatment: "honoured", why: "the answer's token limit." },
  { field: "temperature", treatment: "honoured", why: "sampling, within the range the target takes." },
  { field: "top_p", treatment: "honoured", why: "sampling, within the range the target takes." },
  { field: "metadata", treatment: "honoured", why: "the request's labels, and OpenAI targets' metadata." },
  { field: "user", treatment: "honoured", why: "the end user: OpenAI's user, Anthropic's metadata.user_id." },
  { field: "service_tier", treatment: "honoured", why: "sent where a target takes the tier; refused by name where it cannot be kept." },
  { field: "stream", treatment: "honoured", why: "SSE or one JSON response." },
  { field: "include", treatment: "honoured", why: `only "reasoning.encrypted_content", which every reasoning item carries anyway; other entries are refused.` },
  {
    field: "store",
    treatment: "honoured",
    why: "true (the default when absent): the response is kept (responses.ttlDays) for previous_response_id, item_reference and GET /v1/responses/{id}; false: nothing is kept. With responses.store: false absent means false and true is refused by name.",
  },
  {
    field: "truncation",
    treatment: "honoured",
    why: `"auto": the oldest whole turns are dropped until the conversation fits the target's context window, said in sluice-context; "disabled" (the default): a conversation too long is refused.`,
  },
  { field: "prompt_cache_key", treatment: "carried", why: "forwarded to OpenAI targets; others cache prefixes without it, and it is named in sluice-dropped-params." },
  { field: "safety_identifier", treatment: "carried", why: "forwarded to OpenAI targets; elsewhere named in sluice-dropped-params (the user, if any, still goes as the target's end-user field)." },
  { field: "client_metadata", treatment: "dropped", why: "Codex's own bookkeeping about the client; no target takes it." },
  { field: "header session-id, originator, x-codex-turn-metadata, version", treatment: "ignored", why: "they describe the client, not the answer." },
  {
    field: "previous_response_id",
    treatment: "honoured",
    why: "the stored chain's input and output go before this request's input (its instructions are not inherited); unknown, expired or another key's is a 404. Refused by name with responses.store: false.",
  },
  { field: "input[] item_reference", treatment: "honoured", why: "the stored item it names, as if sent inline; unknown or another key's is a 404. Refused by name with responses.store: false." },
  { field: "conversation", treatment: "honoured", why: "a stored conversation (/v1/conversations; responses.store): its items come before input, and the response's input and output are appended to it; with previous_response_id, refused." },
  {
    field: "background",
    treatment: "honoured",
    why: 'true runs the response on the gateway, detached from the call, which returns it queued: GET /v1/responses/{id} follows it, with stream=true replays its events, cancel stops it (docs/responses.md, "Background runs"); it needs store (true, the default): with store: false it is refused.',
  },
  { field: "prompt", treatment: "refused", why: "stored prompt templates are not served here: send instructions and input instead", refusedWhen: set },
];
