import type { CallLayer } from "../../call/call-layer.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson } from "../../http/node-http.js";
import { pageOf } from "../../response-state/item-page.js";
import type { ResponseState } from "../../response-state/response-state.js";
import type { StoredResponse } from "../../response-state/stored-response.js";
import type { Principal } from "../../tenancy/principal.js";
import { pageQueryOf } from "./page-query.js";
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

/** `GET /v1/responses/{id}/input_items`: the response's own input items, each with its id, as a cursor page. */
export function listInputItems(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: StoredRoutesOptions, id: string): Promise<void> {
  return withRecord(req, res, exchange, options, id, (record) => {
    const { items: data, hasMore } = pageOf(record.input, pageQueryOf(new URL(req.url ?? "/", "http://x").searchParams));
    sendJson(res, 200, { object: "list", data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore });
  });
}
