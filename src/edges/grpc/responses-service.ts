import { create, type JsonObject as StructValue } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { DeleteResponseResponseSchema, GetResponseResponseSchema, ListOrder, ListResponseItemsResponseSchema, type ResponsesService, StoredResponseStatus } from "../../../gen/sluice/v1/responses_service_pb.js";
import type { CallLayer } from "../../call/call-layer.js";
import { GatewayError } from "../../core/errors.js";
import { pageOf } from "../../response-state/item-page.js";
import { isResponseId, type JsonObject } from "../../response-state/response-ids.js";
import type { ResponseState } from "../../response-state/response-state.js";
import type { StoredResponse, StoredStatus } from "../../response-state/stored-response.js";
import { toConnectError } from "./connect-errors.js";
import { callerOf } from "./handler-call.js";

const STATUSES: Readonly<Record<StoredStatus, StoredResponseStatus>> = {
  queued: StoredResponseStatus.QUEUED,
  in_progress: StoredResponseStatus.IN_PROGRESS,
  completed: StoredResponseStatus.COMPLETED,
  failed: StoredResponseStatus.FAILED,
  cancelled: StoredResponseStatus.CANCELLED,
  incomplete: StoredResponseStatus.INCOMPLETE,
};

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 100;

/** A Struct holds JSON values only: a record's `undefined` fields are left out, as JSON.stringify leaves them. */
function asStruct(value: JsonObject): StructValue {
  return JSON.parse(JSON.stringify(value)) as StructValue;
}

function checkedId(id: string): string {
  if (!isResponseId(id)) throw new GatewayError("invalid_request", "response_id: not a response id (resp_ and 32 hex digits)", { field: "response_id" });
  return id;
}

/** Unknown, expired, deleted and another key's: one answer, so a key learns nothing of another's responses. */
function notFound(id: string): GatewayError {
  return new GatewayError("not_found", `response_id: no stored response ${id} for this key (unknown, expired or deleted)`, { field: "response_id" });
}

function limitOf(limit: number): number {
  if (limit === 0) return DEFAULT_LIMIT;
  if (limit > MAX_LIMIT) throw new GatewayError("invalid_request", `limit: at most ${MAX_LIMIT}`, { field: "limit" });
  return limit;
}

/**
 * sluice.v1.ResponsesService: the stored responses of the caller's key
 * (docs/responses.md, "gRPC"), read from the same store, in the same
 * shapes, as the HTTP Responses API's `GET /v1/responses/{id}`,
 * `input_items` and `DELETE`. The owner is the key's id, never its name.
 */
export function createResponsesService(calls: CallLayer, state: ResponseState): ServiceImpl<typeof ResponsesService> {
  const asCaller =
    <R>(work: (owner: string) => Promise<R>) =>
    async (ctx: HandlerContext): Promise<R> => {
      const principal = await callerOf(calls, ctx);
      try {
        return await work(principal?.id ?? "");
      } catch (error) {
        throw toConnectError(error);
      }
    };
  const read = async (id: string, owner: string): Promise<StoredResponse> => {
    const record = await state.store.get(checkedId(id), owner);
    if (!record) throw notFound(id);
    return record;
  };
  return {
    getResponse: (req, ctx) =>
      asCaller(async (owner) => {
        const record = await read(req.responseId, owner);
        return create(GetResponseResponseSchema, {
          responseId: record.id,
          status: STATUSES[record.status],
          model: typeof record.response.model === "string" ? record.response.model : "",
          createdAt: BigInt(record.createdAt),
          previousResponseId: record.previousId ?? "",
          response: asStruct(record.response),
        });
      })(ctx),
    listResponseItems: (req, ctx) =>
      asCaller(async (owner) => {
        const limit = limitOf(req.limit);
        const record = await read(req.responseId, owner);
        const page = pageOf(record.input, { limit, order: req.order === ListOrder.ASC ? "asc" : "desc", ...(req.after === "" ? {} : { after: req.after }) });
        const ids = page.items.map((item) => (typeof item.id === "string" ? item.id : ""));
        return create(ListResponseItemsResponseSchema, { items: page.items.map(asStruct), hasMore: page.hasMore, firstId: ids[0] ?? "", lastId: ids.at(-1) ?? "" });
      })(ctx),
    deleteResponse: (req, ctx) =>
      asCaller(async (owner) => {
        if (!(await state.store.delete(checkedId(req.responseId), owner))) throw notFound(req.responseId);
        return create(DeleteResponseResponseSchema);
      })(ctx),
  };
}
