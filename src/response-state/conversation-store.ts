import { GatewayError } from "../core/errors.js";
import { conversationItemId, itemPrefix, type JsonObject, placeOfItem } from "./response-ids.js";
import type { ItemPage, PageQuery } from "./stored-response.js";

/**
 * One conversation as the gateway keeps it (docs/responses.md,
 * "Conversations"): its metadata, and beside it a growing list of items
 * (the Responses wire items, each with an id that names its place,
 * `msg_<hex>_c<n>`: response-ids.ts).
 */
export interface StoredConversation {
  /** `conv_` + 32 hex: the conversation's id, and the secret its rows are sealed with (seal-record.ts). */
  readonly id: string;
  /** The key id (Principal.id) that made it, never its name; "" while authentication is off. */
  readonly owner: string;
  /** Epoch seconds. */
  readonly createdAt: number;
  readonly metadata: Readonly<Record<string, string>>;
}

/** What every change is kept under: responses.ttlDays from the change, responses.maxStoredPerKey. */
export interface KeepLimits {
  readonly ttlMs: number;
  /** Most bytes one owner may keep, conversations and `storedElsewhere` together (0: no limit). */
  readonly maxStoredBytes: number;
  /**
   * What else the owner keeps under the same quota (its stored responses).
   * Read before a change's transaction, never inside it: the embedded
   * PGlite is one connection, which the transaction holds.
   */
  readonly storedElsewhere?: (owner: string) => Promise<number>;
}

/**
 * Where conversations live: PostgreSQL (pg-conversation-store.ts) or memory
 * (memory-conversation-store.ts, for fast tests). Every call takes the
 * asking key's id and answers as if the conversation did not exist when
 * another key owns it, so "not yours" and "unknown" are the same 404.
 * A change (create, update, append, item deleted) keeps the conversation
 * `ttlMs` longer; reads do not.
 */
export interface ConversationStore {
  /** Keeps a new conversation with its first items; returns them with their ids. Throws `failed_precondition` past the quota. */
  create(conversation: StoredConversation, items: readonly JsonObject[], limits: KeepLimits): Promise<readonly JsonObject[]>;
  get(id: string, owner: string): Promise<StoredConversation | undefined>;
  /** Replaces its metadata; undefined when there is no such conversation for `owner`. */
  update(id: string, owner: string, metadata: Readonly<Record<string, string>>, limits: KeepLimits): Promise<StoredConversation | undefined>;
  /** Whether it existed for `owner` (and is now gone, with its items). */
  delete(id: string, owner: string): Promise<boolean>;
  /** Appends items (their ids assigned here, in order); undefined when there is no such conversation. Throws `failed_precondition` past the quota. */
  append(id: string, owner: string, items: readonly JsonObject[], limits: KeepLimits): Promise<readonly JsonObject[] | undefined>;
  /** One page of its items; undefined when there is no such conversation. Throws `invalid_request` (field `after`) for an id not of this conversation. */
  items(id: string, owner: string, page: PageQuery): Promise<ItemPage | undefined>;
  /** Every item, oldest first (what a response with `conversation` starts from); undefined when there is no such conversation. */
  allItems(id: string, owner: string): Promise<readonly JsonObject[] | undefined>;
  item(id: string, owner: string, itemId: string): Promise<JsonObject | undefined>;
  /** Whether the item existed in the conversation for `owner` (and is now gone). */
  deleteItem(id: string, owner: string, itemId: string, limits: KeepLimits): Promise<boolean>;
  /** Removes every conversation of `owner`; returns how many. */
  purge(owner: string): Promise<number>;
  /** Removes expired conversations; returns how many. */
  sweep(): Promise<number>;
}

/** The place ids of a conversation's items run to (`_c<n>`, six digits: response-ids.ts). */
export const MAX_ITEMS_PER_CONVERSATION = 1_000_000;

/** `item` with the id of place `seq` in conversation `id` (first, as the API shows it), any id it came with replaced. */
export function withItemId(item: JsonObject, id: string, seq: number): JsonObject {
  const { id: _ignored, ...rest } = item;
  return { id: conversationItemId(itemPrefix(item.type), id, seq), ...rest };
}

/** The place of an item id in conversation `id`, or undefined when it names no place there. */
export function seqOf(itemId: string, id: string): number | undefined {
  const place = placeOfItem(itemId);
  return place?.kind === "conversation" && place.conversationId === id ? place.index : undefined;
}

/** `after` as a place: -1 (asc) or past the end (desc) when absent; a 400 naming `after` when it is not an item of this conversation. */
export function afterSeq(page: PageQuery, id: string): number {
  if (page.after === undefined) return page.order === "asc" ? -1 : MAX_ITEMS_PER_CONVERSATION;
  const seq = seqOf(page.after, id);
  if (seq === undefined) throw new GatewayError("invalid_request", "after: not an item of this conversation", { field: "after" });
  return seq;
}

export function quotaError(maxStoredBytes: number): GatewayError {
  return new GatewayError("failed_precondition", `stored conversations of this key would pass responses.maxStoredPerKey (${maxStoredBytes} bytes): delete some, or send the conversation in input instead`);
}

export function tooManyItems(): GatewayError {
  return new GatewayError("failed_precondition", `a conversation holds at most ${MAX_ITEMS_PER_CONVERSATION - 1} items: start another`);
}
