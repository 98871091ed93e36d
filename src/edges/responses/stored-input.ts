import { quoteClientValue } from "../../core/client-text.js";
import { GatewayError } from "../../core/errors.js";
import { placeOfItem } from "../../response-state/response-ids.js";
import type { ResponseState } from "../../response-state/response-state.js";
import type { StoredTurn } from "../../response-state/stored-response.js";
import type { StoredContext } from "./from-responses.js";
import { invalidField } from "./invalid-field.js";
import { chainTurns } from "./with-history.js";

/** An id as the API's messages quote it ('resp_…'); anything else a client sent, quoted safely. */
export function quotedId(id: string): string {
  return /^[\w-]{1,100}$/.test(id) ? `'${id}'` : quoteClientValue(id, 64);
}

/** A stored response unknown, expired, deleted or another key's: one answer, so an id tells nothing about who holds it. */
export function responseNotFound(id: string): GatewayError {
  return new GatewayError("not_found", `Response with id ${quotedId(id)} not found.`, { field: "response_id" });
}

/** The Responses API's 404 for a `previous_response_id` it cannot continue (responses-errors.ts gives it its code). */
export function previousNotFound(id: string): GatewayError {
  return new GatewayError("not_found", `Previous response with id ${quotedId(id)} not found.`, { field: "previous_response_id" });
}

/**
 * The conversation `previous_response_id` names, oldest turn first.
 * Unknown, expired, deleted and another key's are one 404, so an id says
 * nothing about who else holds it; a chain longer than
 * responses.maxChainDepth (or with an expired link) is a 400.
 */
async function historyOf(id: string, owner: string, state: ResponseState): Promise<StoredTurn> {
  const { maxChainDepth } = state.settings();
  const chain = await state.store.chain(id, owner, maxChainDepth);
  if (chain === undefined) {
    if ((await state.store.get(id, owner)) === undefined) throw previousNotFound(id);
    return invalidField("previous_response_id", `the chain of responses it continues is longer than ${maxChainDepth} (responses.maxChainDepth), or an earlier response in it expired: send the conversation in input instead`);
  }
  const turns = chain.map((record) => record.turn ?? invalidField("previous_response_id", `response ${quotedId(record.id)} has not finished: wait for it, or continue an earlier one`));
  return chainTurns(turns);
}

/**
 * A body's `item_reference` items replaced by the stored items they name
 * (a stored response's input or output item, or a conversation's item:
 * the id says which), so the decoder reads them as if sent inline. An unknown id (or another
 * key's) is a 404 naming the item.
 */
async function resolveReferences(input: readonly unknown[], owner: string, state: ResponseState): Promise<unknown[] | undefined> {
  const at = input.flatMap((item, i) => (item !== null && typeof item === "object" && (item as { type?: unknown }).type === "item_reference" ? [i] : []));
  if (at.length === 0) return undefined;
  const resolved = [...input];
  await Promise.all(
    at.map(async (i) => {
      const id = (input[i] as { id?: unknown }).id;
      if (typeof id !== "string" || id === "") invalidField(`input[${i}].id`, "must name a stored item");
      const place = placeOfItem(id);
      const item = place?.kind === "conversation" ? await state.conversations?.item(place.conversationId, owner, id) : await state.store.item(id, owner);
      if (item === undefined) throw new GatewayError("not_found", `Item with id ${quotedId(id)} not found.`, { field: `input[${i}].id` });
      resolved[i] = item;
    }),
  );
  return resolved;
}

/**
 * What the stored state adds to a `POST /v1/responses` body before it is
 * decoded (from-responses.ts stays synchronous): the chain that
 * `previous_response_id` names, and `item_reference` items resolved. The
 * body comes back with its references replaced; everything else about it
 * is checked by the decoder. Without state, the body as it is: the decoder
 * refuses the state fields by name.
 */
export async function loadStoredContext(json: unknown, owner: string, state: ResponseState | undefined): Promise<{ readonly body: unknown; readonly stored: StoredContext }> {
  if (state === undefined || json === null || typeof json !== "object" || Array.isArray(json)) return { body: json, stored: { stateful: state !== undefined } };
  const body = json as Record<string, unknown>;
  const previous = body.previous_response_id;
  const input = body.input;
  const [history, resolved] = await Promise.all([typeof previous === "string" && previous !== "" ? historyOf(previous, owner, state) : undefined, Array.isArray(input) ? resolveReferences(input, owner, state) : undefined]);
  return {
    body: resolved === undefined ? body : { ...body, input: resolved },
    stored: { stateful: true, ...(history === undefined ? {} : { history }) },
  };
}
