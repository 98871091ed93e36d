import type { ChatMessage } from "../core/chat-request.js";
import type { JsonObject } from "./response-ids.js";

/** A stored response's state, as the Responses API names it. */
export type StoredStatus = "queued" | "in_progress" | "completed" | "failed" | "cancelled" | "incomplete";

/**
 * One response as the gateway keeps it (docs/responses.md, "Stored
 * responses"). Items are the Responses wire items, each with its id
 * (response-ids.ts), so `GET /v1/responses/{id}` and `input_items` answer
 * from the record as it was sent, and `previous_response_id` rebuilds the
 * conversation from the same items the client saw.
 */
export interface StoredResponse {
  /** `resp_` + 32 hex: the response's id, and the secret its record is sealed with (seal-record.ts). */
  readonly id: string;
  /** The key id (Principal.id) that made it, never its name; "" while authentication is off. */
  readonly owner: string;
  /** The response it continued (`previous_response_id`): the chain a later turn rebuilds. */
  readonly previousId?: string;
  /** The conversation it appended to. */
  readonly conversationId?: string;
  readonly status: StoredStatus;
  /** Epoch seconds. */
  readonly createdAt: number;
  /** This response's own input items (not those of the responses before it), each with its id. */
  readonly input: readonly JsonObject[];
  /** The response object as the API shows it: output items (with ids), usage, model alias, metadata, status, timestamps. */
  readonly response: JsonObject;
  /** The turn as canonical messages, for continuing it (absent while a background run has not finished). */
  readonly turn?: StoredTurn;
  /**
   * A background run not yet ended: until when (epoch ms) the replica
   * running it vouches for it; it renews it while it runs. Past it the run
   * was left by a stopped process, and reads mark it failed.
   */
  readonly leaseUntil?: number;
}

/**
 * Who issued a replayed reasoning part (`messages[message].content[part]`)
 * or call signature (`messages[message].toolCalls[call]`) of a turn: the
 * same shape as the Responses edge's ReplayOrigin, indexed within the turn.
 */
export interface TurnOrigin {
  readonly message: number;
  readonly part?: number;
  readonly call?: number;
  readonly provider: string;
  readonly model: string;
}

/**
 * A response's turn as canonical messages: its own input (without
 * `instructions`, which a continuation does not inherit) and its answer as
 * an assistant message. Any edge continues a chain from these without
 * reading another edge's wire (`previous_response_id` on gRPC as on HTTP).
 */
export interface StoredTurn {
  readonly messages: readonly ChatMessage[];
  readonly origins: readonly TurnOrigin[];
}

/** What an owner keeps, for the admin's listing and the per-key quota. */
export interface StoredSummary {
  readonly owner: string;
  readonly count: number;
  readonly bytes: number;
}

/** One page of a listing: `input_items`, conversation items. */
export interface ItemPage {
  readonly items: readonly JsonObject[];
  readonly hasMore: boolean;
}

export interface PageQuery {
  /** An item id: the page starts after it. */
  readonly after?: string;
  /** 1–100. */
  readonly limit: number;
  readonly order: "asc" | "desc";
}

/**
 * Where stored responses live: PostgreSQL (pg-response-store.ts) or memory
 * (memory-response-store.ts, for fast tests). Every read takes the asking
 * key's id and answers as if the response did not exist when another key
 * owns it, so "not yours" and "unknown" are the same 404.
 */
export interface ResponseStore {
  /**
   * Keeps `record` (replacing one with the same id and owner) for `ttlMs`.
   * Throws GatewayError `failed_precondition` when the owner would pass its
   * `maxStoredBytes`.
   */
  put(record: StoredResponse, ttlMs: number): Promise<void>;
  get(id: string, owner: string): Promise<StoredResponse | undefined>;
  /**
   * The chain that ends at `id`, oldest first, following `previousId`;
   * undefined when any link is unknown, expired, deleted or owned by
   * another key. At most `maxDepth` records (a longer chain is refused by
   * the caller).
   */
  chain(id: string, owner: string, maxDepth: number): Promise<readonly StoredResponse[] | undefined>;
  /** An item by its id (input or output of a stored response), if `owner` may read it. */
  item(itemId: string, owner: string): Promise<JsonObject | undefined>;
  /** Whether it existed for `owner` (and is now gone). */
  delete(id: string, owner: string): Promise<boolean>;
  /** Removes every record of `owner`; returns how many. */
  purge(owner: string): Promise<number>;
  /** Counts and bytes per owner (all owners, or one). */
  summaries(owner?: string): Promise<readonly StoredSummary[]>;
  /** Removes expired records; returns how many. */
  sweep(): Promise<number>;
}
