import type { CallLayer } from "../../call/call-layer.js";
import { quoteClientValue } from "../../core/client-text.js";
import { GatewayError, toGatewayError } from "../../core/errors.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson } from "../../http/node-http.js";
import { type BodyLimits, readBody } from "../../http/read-body.js";
import { parseJsonBody } from "../../http/read-json.js";
import type { ConversationStore, KeepLimits, StoredConversation } from "../../response-state/conversation-store.js";
import { isConversationId, type JsonObject, newConversationId } from "../../response-state/response-ids.js";
import type { ResponseState } from "../../response-state/response-state.js";
import { checkedItems, checkedMetadata } from "./conversation-items.js";
import { invalidField } from "./invalid-field.js";
import { pageQueryOf } from "./page-query.js";
import { toResponsesError } from "./responses-errors.js";

/** What the Conversations API needs: the caller's key (as on POST /v1/responses), body limits, and the state with its conversations. */
export interface ConversationRoutes {
  readonly calls: CallLayer;
  readonly limits: BodyLimits & StructureLimits;
  readonly state: ResponseState & { readonly conversations: ConversationStore };
}

/** One route as routes.ts serves it: `ids` are the path's `{id}` segments, in order. */
export interface ConversationRoute {
  readonly method: string;
  readonly path: string;
  readonly edge: "responses";
  readonly serve: (req: AnyRequest, res: AnyResponse, exchange: Exchange, id: string, ids: readonly string[]) => Promise<void>;
}

const DAY_MS = 86_400_000;

/** The quota (shared with the key's stored responses) and lifetime every change is kept under, as the settings are now (they reload live). */
export function keepLimits(state: ResponseState): KeepLimits {
  const s = state.settings();
  return {
    ttlMs: s.ttlDays * DAY_MS,
    maxStoredBytes: s.maxStoredPerKey,
    storedElsewhere: async (owner) => (await state.store.summaries(owner)).reduce((n, summary) => n + summary.bytes, 0),
  };
}

/** The API's 404, the same for an unknown conversation and another key's. */
export function conversationNotFound(id: string): GatewayError {
  return new GatewayError("not_found", `conversation ${quoteClientValue(id, 64)} not found`, { field: "conversation_id" });
}

function itemNotFound(itemId: string): GatewayError {
  return new GatewayError("not_found", `item ${quoteClientValue(itemId, 64)} not found`, { field: "item_id" });
}

function conversationObject(c: StoredConversation): object {
  return { id: c.id, object: "conversation", created_at: c.createdAt, metadata: c.metadata };
}

function listObject(items: readonly JsonObject[], hasMore: boolean): object {
  return { object: "list", data: items, first_id: items[0]?.id ?? null, last_id: items.at(-1)?.id ?? null, has_more: hasMore };
}

/** A JSON object body (an empty body reads as `{}`: the SDK's create sends none without arguments). */
async function bodyOf(req: AnyRequest, limits: BodyLimits & StructureLimits): Promise<Record<string, unknown>> {
  const raw = await readBody(req, limits);
  const json = raw.length === 0 ? {} : parseJsonBody(raw, limits);
  if (json === null || typeof json !== "object" || Array.isArray(json)) throw new GatewayError("invalid_request", "request body: must be a JSON object", { field: "body" });
  return json as Record<string, unknown>;
}

/** Refuses body fields other than `allowed`, naming them, as the Responses edge does. */
function onlyFields(body: Record<string, unknown>, allowed: readonly string[]): void {
  for (const key of Object.keys(body)) if (!allowed.includes(key)) invalidField(key, "not served on this route: remove it");
}

/** Runs `serve` for the caller identified by its key (the owner of what it makes and sees); any failure in the Responses API's error body. */
function asCaller(options: ConversationRoutes, serve: (owner: string, req: AnyRequest, ids: readonly string[]) => Promise<{ status?: number; body: unknown }>): ConversationRoute["serve"] {
  return async (req, res, exchange, _id, ids) => {
    try {
      const principal = await options.calls.identify(headerOf(req, "authorization"), exchange.edge, exchange.fields, exchange.remote);
      const { status, body } = await serve(principal?.id ?? "", req, ids);
      exchange.code = "ok";
      sendJson(res, status ?? 200, body);
    } catch (error) {
      if (res.headersSent) return;
      exchange.code = toGatewayError(error).code;
      const { status, headers, body } = toResponsesError(error);
      sendJson(res, status, body, headers);
    }
  };
}

/** The conversation `id` of `owner`; a 404 when there is none (unknown, expired, deleted or another key's). */
async function owned(store: ConversationStore, id: string, owner: string): Promise<StoredConversation> {
  const found = isConversationId(id) ? await store.get(id, owner) : undefined;
  if (!found) throw conversationNotFound(id);
  return found;
}

/**
 * The Conversations API (docs/responses.md, "Conversations"): a stored,
 * growing list of items owned by the key that made it, sealed and kept as
 * stored responses are (responses.ttlDays since its last change, within
 * responses.maxStoredPerKey).
 */
export function conversationRoutes(options: ConversationRoutes): ConversationRoute[] {
  const store = options.state.conversations;
  const limits = () => keepLimits(options.state);
  const route = (method: string, path: string, serve: Parameters<typeof asCaller>[1]): ConversationRoute => ({ method, path, edge: "responses", serve: asCaller(options, serve) });
  return [
    route("POST", "/v1/conversations", async (owner, req) => {
      const body = await bodyOf(req, options.limits);
      onlyFields(body, ["items", "metadata"]);
      const items = checkedItems(body.items);
      const conversation: StoredConversation = { id: newConversationId(), owner, createdAt: Math.floor(Date.now() / 1000), metadata: checkedMetadata(body.metadata) };
      await store.create(conversation, items, limits());
      return { body: conversationObject(conversation) };
    }),
    route("GET", "/v1/conversations/{id}", async (owner, _req, [id]) => ({ body: conversationObject(await owned(store, id!, owner)) })),
    route("POST", "/v1/conversations/{id}", async (owner, req, [id]) => {
      const body = await bodyOf(req, options.limits);
      onlyFields(body, ["metadata"]);
      if (body.metadata === undefined) invalidField("metadata", "required: the conversation's new metadata");
      const updated = isConversationId(id!) ? await store.update(id!, owner, checkedMetadata(body.metadata), limits()) : undefined;
      if (!updated) throw conversationNotFound(id!);
      return { body: conversationObject(updated) };
    }),
    route("DELETE", "/v1/conversations/{id}", async (owner, _req, [id]) => {
      if (!isConversationId(id!) || !(await store.delete(id!, owner))) throw conversationNotFound(id!);
      return { body: { id, object: "conversation.deleted", deleted: true } };
    }),
    route("POST", "/v1/conversations/{id}/items", async (owner, req, [id]) => {
      const body = await bodyOf(req, options.limits);
      onlyFields(body, ["items"]);
      if (!Array.isArray(body.items) || body.items.length === 0) invalidField("items", "required: one to 20 items");
      const items = checkedItems(body.items);
      const added = isConversationId(id!) ? await store.append(id!, owner, items, limits()) : undefined;
      if (!added) throw conversationNotFound(id!);
      return { body: listObject(added, false) };
    }),
    route("GET", "/v1/conversations/{id}/items", async (owner, req, [id]) => {
      const page = pageQueryOf(new URL(req.url ?? "/", "http://x").searchParams);
      const found = isConversationId(id!) ? await store.items(id!, owner, page) : undefined;
      if (!found) throw conversationNotFound(id!);
      return { body: listObject(found.items, found.hasMore) };
    }),
    route("GET", "/v1/conversations/{id}/items/{id}", async (owner, _req, [id, itemId]) => {
      await owned(store, id!, owner);
      const item = await store.item(id!, owner, itemId!);
      if (!item) throw itemNotFound(itemId!);
      return { body: item };
    }),
    route("DELETE", "/v1/conversations/{id}/items/{id}", async (owner, _req, [id, itemId]) => {
      const conversation = await owned(store, id!, owner);
      if (!(await store.deleteItem(id!, owner, itemId!, limits()))) throw itemNotFound(itemId!);
      return { body: conversationObject(conversation) };
    }),
  ];
}
