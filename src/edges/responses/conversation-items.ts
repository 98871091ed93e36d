import { GatewayError } from "../../core/errors.js";
import type { JsonObject } from "../../response-state/response-ids.js";
import { messagesFromInput } from "./input-items.js";
import { invalidField } from "./invalid-field.js";

/** Items one `POST /v1/conversations` or `…/items` may add, as the API allows. */
export const MAX_ITEMS_PER_ADD = 20;

/** An error naming `input[i]…` as `<list>[i + shift]…` (`items[2].content`), message and field alike. */
export function renamedInput(error: unknown, list: (index: number) => string): unknown {
  if (!(error instanceof GatewayError) || error.field === undefined) return error;
  const rename = (text: string) => text.replace(/\binput\[(\d+)\]/g, (_all, n: string) => list(Number(n)));
  const field = rename(error.field);
  if (field === error.field) return error;
  return new GatewayError(error.code, rename(error.message), { field, cause: error.cause });
}

/** A message's content as the API lists it: a string becomes one text part of the side that said it. */
function contentOf(role: unknown, content: unknown): unknown {
  if (typeof content !== "string") return content;
  return [{ type: role === "assistant" ? "output_text" : "input_text", text: content, ...(role === "assistant" ? { annotations: [] } : {}) }];
}

/** One input item as a conversation keeps it: typed, its content as parts, a message `completed`; its id is the store's to give. */
export function normalItem(item: JsonObject): JsonObject {
  const { id: _id, ...rest } = item;
  if (rest.type !== undefined && rest.type !== "message") return rest;
  return { type: "message", status: "completed", ...rest, content: contentOf(rest.role, rest.content) };
}

/** A request's `input` as items: a string is one user message. */
export function inputAsItems(input: string | readonly unknown[]): JsonObject[] {
  if (typeof input === "string") return [normalItem({ type: "message", role: "user", content: input })];
  return input.map((item) => normalItem(item as JsonObject));
}

/**
 * `items` of a create or add request, checked by the Responses edge's own
 * item rules (what it would take in `input`: a conversation's items become
 * a later response's input) and normalised; a 400 names `items[i]…`.
 */
export function checkedItems(items: unknown, field = "items"): JsonObject[] {
  if (items === undefined || items === null) return [];
  if (!Array.isArray(items)) invalidField(field, "must be an array of items");
  if (items.length > MAX_ITEMS_PER_ADD) invalidField(field, `at most ${MAX_ITEMS_PER_ADD} items at a time`);
  try {
    messagesFromInput(items, undefined);
  } catch (error) {
    throw renamedInput(error, (i) => `${field}[${i}]`);
  }
  return inputAsItems(items);
}

/** `metadata` as the API bounds it: at most 16 string pairs, keys of 64 characters, values of 512. */
export function checkedMetadata(metadata: unknown): Record<string, string> {
  if (metadata === undefined || metadata === null) return {};
  if (typeof metadata !== "object" || Array.isArray(metadata)) invalidField("metadata", "must be an object of strings");
  const entries = Object.entries(metadata);
  if (entries.length > 16) invalidField("metadata", "at most 16 pairs");
  for (const [key, value] of entries) {
    if (key.length > 64) invalidField("metadata", "keys are at most 64 characters");
    if (typeof value !== "string") invalidField(`metadata.${key}`, "must be a string");
    if (value.length > 512) invalidField(`metadata.${key}`, "at most 512 characters");
  }
  return Object.fromEntries(entries) as Record<string, string>;
}
