import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { type AdminService, KeyStoredResponsesSchema, ListStoredResponsesResponseSchema, PurgeResponsesResponseSchema } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { GatewayError } from "../../core/errors.js";
import type { ResponsesAdmin } from "../../response-state/responses-admin.js";

type Guard = <R>(work: () => Promise<R>) => (ctx: HandlerContext) => Promise<R>;
type Impl = Omit<ServiceImpl<typeof AdminService>, "watchStats">;

const OFF = () => new GatewayError("failed_precondition", "stored responses are off (responses.store: false)");

/** AdminService.ListStoredResponses and PurgeResponses (docs/responses.md, "Storage"). */
export function adminResponseHandlers(responses: ResponsesAdmin | undefined, guard: Guard): Pick<Impl, "listStoredResponses" | "purgeResponses"> {
  return {
    listStoredResponses: (req, ctx) =>
      guard(async () => {
        if (!responses) throw OFF();
        const keys = await responses.list(req.keyId);
        return create(ListStoredResponsesResponseSchema, {
          keys: keys.map((k) => create(KeyStoredResponsesSchema, { keyId: k.keyId, keyName: k.keyName ?? "", count: BigInt(k.count), bytes: BigInt(k.bytes) })),
        });
      })(ctx),
    purgeResponses: (req, ctx) =>
      guard(async () => {
        if (!responses) throw OFF();
        const { purged, conversationsPurged, keyIds } = await responses.purge({ keyId: req.keyId, keyName: req.keyName });
        return create(PurgeResponsesResponseSchema, { purged: BigInt(purged), conversationsPurged: BigInt(conversationsPurged), keyIds: [...keyIds] });
      })(ctx),
  };
}
