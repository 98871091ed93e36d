import type { CallLayer } from "../../call/call-layer.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson } from "../../http/node-http.js";
import type { JsonObject } from "../../response-state/response-ids.js";
import type { ResponseState } from "../../response-state/response-state.js";
import type { PageQuery, StoredResponse } from "../../response-state/stored-response.js";
import type { Principal } from "../../tenancy/principal.js";
import { invalidField } from "./invalid-field.js";
import { sendResponsesError } from "./responses-route.js";
import { responseNotFound } from "./stored-input.js";

/** What the stored-response routes need: the key check of every edge, and the store. */
export interface StoredRoutesOptions {
  readonly calls: CallLayer;
  readonly state: ResponseState;
}

/** The caller's key id, checked as `POST /v1/responses` checks it ("" while authentication is off). */
async function ownerOf(req: AnyRequest, exchange: Exchange, calls: CallLayer): Promise<string> {
  const principal: Principal | undefined = await calls.identify(headerOf(req, "authorization"), exchange.edge, exchange.fields, exchange.remote);
  return principal?.id ?? "";
}

/** Runs `serve` for the caller's own record `id`; any failure in the Responses error body. */
async function withRecord(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: StoredRoutesOptions, id: string, serve: (record: StoredResponse, owner: string) => Promise<void> | void): Promise<void> {
  try {
    const owner = await ownerOf(req, exchange, options.calls);
    const record = await options.state.store.get(id, owner);
    if (!record) throw responseNotFound(id);
    await serve(record, owner);
    exchange.code = "ok";
  } catch (error) {
    sendResponsesError(res, exchange, error);
  }
}

/** `DELETE /v1/responses/{id}`: gone for every later read, `previous_response_id` and `item_reference` included. */
export function deleteResponse(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: StoredRoutesOptions, id: string): Promise<void> {
  return withRecord(req, res, exchange, options, id, async (_record, owner) => {
    if (!(await options.state.store.delete(id, owner))) throw responseNotFound(id);
    sendJson(res, 200, { id, object: "response", deleted: true });
  });
}

/** The query of `input_items`: `after` (an item id), `limit` 1–100 (default 20), `order` asc or desc (default desc). */
export function pageQueryOf(search: URLSearchParams): PageQuery {
  const limitText = search.get("limit");
  const limit = limitText === null ? 20 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) invalidField("limit", "must be a whole number from 1 to 100");
  const order = search.get("order") ?? "desc";
  if (order !== "asc" && order !== "desc") invalidField("order", 'must be "asc" or "desc"');
  const after = search.get("after");
  return { limit, order, ...(after ? { after } : {}) };
}

/** One page of `items` in `query`'s order, after `query.after`. */
export function pageOf(items: readonly JsonObject[], query: PageQuery): { readonly data: readonly JsonObject[]; readonly hasMore: boolean } {
  const ordered = query.order === "asc" ? items : [...items].reverse();
  let start = 0;
  if (query.after !== undefined) {
    const at = ordered.findIndex((item) => item.id === query.after);
    if (at < 0) invalidField("after", "names no input item of this response");
    start = at + 1;
  }
  const data = ordered.slice(start, start + query.limit);
  return { data, hasMore: start + query.limit < ordered.length };
}

/** `GET /v1/responses/{id}/input_items`: the response's own input items, each with its id, as a cursor page. */
export function listInputItems(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: StoredRoutesOptions, id: string): Promise<void> {
  return withRecord(req, res, exchange, options, id, (record) => {
    const { data, hasMore } = pageOf(record.input, pageQueryOf(new URL(req.url ?? "/", "http://x").searchParams));
    sendJson(res, 200, { object: "list", data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore });
  });
}
