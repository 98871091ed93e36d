import { inputItemId, itemPrefix, type JsonObject } from "../../response-state/response-ids.js";
import type { StoredResponse, StoredStatus, StoredTurn } from "../../response-state/stored-response.js";
import { messagesFromInput } from "./input-items.js";
import type { ResponseObject } from "./response-object.js";

/** What a stored response is made of, beside the response object the encoder ended with. */
export interface StoredRecordParts {
  /** The response as the client saw it last (`ResponseEncoder.response()`): its id is the record's. */
  readonly response: ResponseObject;
  /** The key id that asked (`Principal.id`), "" while authentication is off. */
  readonly owner: string;
  /** The request's own input as sent, item references resolved (`ResponsesRequest.input`). */
  readonly input: string | readonly unknown[];
  /** `previous_response_id` (`ResponsesRequest.previousId`). */
  readonly previousId?: string;
  readonly conversationId?: string;
  /** Overrides the response's own status (a background run queued, or cancelled); `queued` and `in_progress` keep no turn. */
  readonly status?: StoredStatus;
}

/** A message's text content as the API lists it: parts (`input_text`, or `output_text` for the assistant's). */
function messageItem(item: JsonObject): JsonObject {
  if (typeof item.content !== "string") return { type: "message", ...item };
  const text = item.role === "assistant" ? { type: "output_text", text: item.content, annotations: [] } : { type: "input_text", text: item.content };
  return { type: "message", ...item, content: [text] };
}

/** The request's input as wire items, as `input_items` lists them: a string is one user message, text content is parts. */
function inputItems(input: string | readonly unknown[]): JsonObject[] {
  if (typeof input === "string") return [messageItem({ role: "user", content: input })];
  return input.map((item) => {
    const object = item as JsonObject;
    return object.type === undefined || object.type === "message" ? messageItem(object) : { ...object };
  });
}

/**
 * The turn as canonical messages: its own input and its output items
 * (output items are valid input items), decoded as the next request's
 * input would be, without `instructions` (a continuation does not inherit
 * them). Undefined when the output cannot be read back, so a chain through
 * it is refused rather than continued wrongly.
 */
function turnOf(input: readonly JsonObject[], output: readonly unknown[]): StoredTurn | undefined {
  try {
    const { messages, origins } = messagesFromInput([...input, ...output], undefined);
    return { messages, origins };
  } catch {
    return undefined;
  }
}

/**
 * A finished (or failed) response as the store keeps it: its own input
 * items, each with an id that names its place (response-ids.ts), so
 * `item_reference` and `input_items` find them, the response object as
 * the client saw it, and its turn as canonical messages for the next
 * `previous_response_id`. The Responses edge calls it when an answer
 * ends; a background run calls it when its run ends.
 */
export function storedRecordOf(parts: StoredRecordParts): StoredResponse {
  const { response } = parts;
  const input = inputItems(parts.input).map((item, i) => ({ ...item, id: inputItemId(itemPrefix(item.type), response.id, i) }));
  const status = parts.status ?? response.status;
  // A run that has not ended has no turn yet: a chain through it is refused until it has (stored-input.ts).
  const turn = status === "queued" || status === "in_progress" ? undefined : turnOf(input, response.output);
  return {
    id: response.id,
    owner: parts.owner,
    ...(parts.previousId === undefined ? {} : { previousId: parts.previousId }),
    ...(parts.conversationId === undefined ? {} : { conversationId: parts.conversationId }),
    status,
    createdAt: response.created_at,
    input,
    response: response as unknown as JsonObject,
    ...(turn === undefined ? {} : { turn }),
  };
}
