import type { JsonObject } from "../../response-state/response-ids.js";
import { inputAsItems, renamedInput } from "./conversation-items.js";
import { invalidField } from "./invalid-field.js";

/** `conversation` on `POST /v1/responses`, as decoded: the request is decoded again once the conversation's items are read. */
export interface ConversationRequest<R> {
  readonly id: string;
  /** This request's own input as the items the conversation gains (before the response's output). */
  readonly input: readonly JsonObject[];
  /** The same request with `prior` (the conversation's items) before its input; a 400 names an item as the caller knows it. */
  join(prior: readonly unknown[]): R;
}

/**
 * The conversation a body names (`"conv_…"` or `{"id": "conv_…"}`), checked
 * before anything else so that naming it with `previous_response_id` gets
 * the API's own 400, whatever else the body holds.
 */
export function conversationIdOf(body: Readonly<Record<string, unknown>>): string | undefined {
  const c = body.conversation;
  if (c === undefined || c === null) return undefined;
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
    invalidField("conversation", "mutually exclusive with previous_response_id: send one of them");
  }
  const id = typeof c === "string" ? c : typeof c === "object" && !Array.isArray(c) ? (c as { id?: unknown }).id : undefined;
  if (typeof id !== "string") invalidField("conversation", 'must be a conversation id or {"id": …}');
  return id;
}

/** `input[i]…` of a joined request as the caller named it: its own items shifted back, the conversation's as `conversation.items[i]`. */
function shifted(field: string, prior: number): string {
  return field.replace(/\binput\[(\d+)\]/g, (_all, n: string) => (Number(n) < prior ? `conversation.items[${n}]` : `input[${Number(n) - prior}]`));
}

/**
 * What a body with `conversation` needs beyond its own decoding: `decode`
 * is the edge's decoder (from-responses.ts), run again over the body with
 * the conversation's items before its input.
 */
export function conversationRequest<R extends { readonly param: (field: string) => string }>(
  body: Readonly<Record<string, unknown>>,
  id: string,
  input: string | readonly unknown[],
  decode: (body: Readonly<Record<string, unknown>>) => R,
): ConversationRequest<R> {
  const own: readonly unknown[] = typeof input === "string" ? [{ role: "user", content: input }] : input;
  return {
    id,
    input: inputAsItems(input),
    join(prior) {
      let joined: R;
      try {
        joined = decode({ ...body, conversation: null, input: [...prior, ...own] });
      } catch (error) {
        throw renamedInput(error, (i) => shifted(`input[${i}]`, prior.length));
      }
      return { ...joined, param: (field: string) => shifted(joined.param(field), prior.length) };
    },
  };
}
