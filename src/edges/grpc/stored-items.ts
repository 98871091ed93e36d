import type { ChatMessage, ContentPart } from "../../core/chat-request.js";
import { messageText } from "../../core/chat-request.js";
import { inputItemId, itemPrefix, type JsonObject } from "../../response-state/response-ids.js";

/**
 * A gRPC request's messages as the Responses API's input items, each with
 * the id that names its place (response-ids.ts `inputItemId`), so
 * `GET /v1/responses/{id}/input_items`, ListResponseItems and
 * `item_reference` read a gRPC-stored response as they read one the HTTP
 * edge kept. Written here from canonical messages, not borrowed from the
 * Responses edge (edges are independent): only the item shapes are shared,
 * and those are the API's.
 *
 * System messages are not items: like the HTTP edge's `instructions` they
 * are shown on the response object and not inherited by a continuation.
 */

type Item = Omit<JsonObject, "id"> & { readonly type: string };

function inputPart(part: ContentPart): JsonObject | undefined {
  switch (part.type) {
    case "text":
      return { type: "input_text", text: part.text };
    case "image_url":
      return { type: "input_image", image_url: part.url, detail: part.detail ?? "auto" };
    default:
      // Reasoning and hosted items travel as items of their own (assistant turns), never inside a user message.
      return undefined;
  }
}

/** The items one message becomes, without ids: an assistant turn may be reasoning, a message and calls. */
function itemsOf(message: ChatMessage): Item[] {
  switch (message.role) {
    case "system":
      return [];
    case "user": {
      const content = message.content.map(inputPart).filter((p) => p !== undefined);
      return [{ type: "message", role: "user", content, status: "completed" }];
    }
    case "tool":
      return [{ type: "function_call_output", call_id: message.toolCallId ?? "", output: messageText(message), status: "completed" }];
    case "assistant":
      return assistantItems(message);
  }
}

/** An assistant turn as the Responses API shows one: its reasoning (as summary text), its text, its calls. */
export function assistantItems(message: ChatMessage): Item[] {
  const items: Item[] = [];
  let reasoning = "";
  let reasoned = false;
  for (const part of message.content) {
    if (part.type !== "reasoning") continue;
    reasoned = true;
    reasoning += part.text;
  }
  // The signatures stay in the stored turn (for continuing it), not in a display item: their envelope is the Responses edge's.
  if (reasoned) items.push({ type: "reasoning", summary: reasoning === "" ? [] : [{ type: "summary_text", text: reasoning }], status: "completed" });
  const text = messageText(message);
  if (text !== "") items.push({ type: "message", role: "assistant", content: [{ type: "output_text", text, annotations: [], logprobs: [] }], status: "completed" });
  for (const call of message.toolCalls ?? []) {
    items.push({ type: "function_call", call_id: call.id, name: call.name, arguments: call.arguments, status: "completed" });
  }
  return items;
}

/** The request's own messages (system ones left out) as input items of `responseId`, numbered in order. */
export function inputItems(responseId: string, messages: readonly ChatMessage[]): JsonObject[] {
  return messages.flatMap(itemsOf).map((item, index) => ({ id: inputItemId(itemPrefix(item.type), responseId, index), ...item }));
}
