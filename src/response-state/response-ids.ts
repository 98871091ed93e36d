import { randomBytes } from "node:crypto";

/** A JSON object as parsed: a wire item or a response object. */
export type JsonObject = Record<string, unknown>;

const RESPONSE_ID = /^resp_[0-9a-f]{32}$/;
const CONVERSATION_ID = /^conv_[0-9a-f]{32}$/;
/** `<type prefix>_<32 hex of the response or conversation>_<in|c|><index>`. */
const ITEM_ID = /^[a-z]{1,8}_([0-9a-f]{32})_(in|c)?(\d{1,6})$/;

/** A new response id: 128 random bits, which also seal its record (seal-record.ts). */
export function newResponseId(): string {
  return `resp_${randomBytes(16).toString("hex")}`;
}

export function newConversationId(): string {
  return `conv_${randomBytes(16).toString("hex")}`;
}

export function isResponseId(id: string): boolean {
  return RESPONSE_ID.test(id);
}

export function isConversationId(id: string): boolean {
  return CONVERSATION_ID.test(id);
}

/** Where an item lives: which response's input or output, or which conversation, and its place there. */
export type ItemPlace =
  | { readonly kind: "output"; readonly responseId: string; readonly index: number }
  | { readonly kind: "input"; readonly responseId: string; readonly index: number }
  | { readonly kind: "conversation"; readonly conversationId: string; readonly index: number };

/**
 * An item id names its place, so `item_reference` finds the record (and
 * its sealing secret) from the id alone: output items are the encoder's
 * `msg_<hex>_<n>`, input items `msg_<hex>_in<n>`, conversation items
 * `msg_<hex>_c<n>`. Undefined for an id this gateway did not make.
 */
export function placeOfItem(itemId: string): ItemPlace | undefined {
  const m = ITEM_ID.exec(itemId);
  if (!m) return undefined;
  const hex = m[1]!;
  const index = Number(m[3]);
  if (m[2] === "c") return { kind: "conversation", conversationId: `conv_${hex}`, index };
  return { kind: m[2] === "in" ? "input" : "output", responseId: `resp_${hex}`, index };
}

/** The id of input item `index` of response `responseId`, prefixed by its type (`msg`, `fc`, `fco`, `rs`…). */
export function inputItemId(prefix: string, responseId: string, index: number): string {
  return `${prefix}_${responseId.slice("resp_".length)}_in${index}`;
}

export function conversationItemId(prefix: string, conversationId: string, index: number): string {
  return `${prefix}_${conversationId.slice("conv_".length)}_c${index}`;
}

/** The id prefix of an item type, as OpenAI's own ids start. */
export function itemPrefix(type: unknown): string {
  switch (type) {
    case "message":
      return "msg";
    case "function_call":
      return "fc";
    case "function_call_output":
      return "fco";
    case "custom_tool_call":
      return "ctc";
    case "custom_tool_call_output":
      return "ctco";
    case "reasoning":
      return "rs";
    case "web_search_call":
      return "ws";
    default:
      return "item";
  }
}
