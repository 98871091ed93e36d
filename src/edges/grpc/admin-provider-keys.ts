import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { type AdminService, DeleteProviderKeyResponseSchema, ListProviderKeysResponseSchema, ProviderKeyInfoSchema, SetProviderKeyResponseSchema } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { GatewayError } from "../../core/errors.js";
import type { ProviderKeyInfo, ProviderKeys } from "../../provider-keys/provider-keys.js";

type Guard = <R>(work: () => Promise<R>) => (ctx: HandlerContext) => Promise<R>;
type Impl = Omit<ServiceImpl<typeof AdminService>, "watchStats">;

const OFF = () => new GatewayError("failed_precondition", "provider keys are not served here");

const info = (key: ProviderKeyInfo) =>
  create(ProviderKeyInfoSchema, {
    provider: key.provider,
    fingerprint: key.fingerprint,
    state: key.state,
    createdAt: timestampFromMs(key.createdAt),
    ...(key.rotatedAt === undefined ? {} : { rotatedAt: timestampFromMs(key.rotatedAt) }),
    rejectedStatus: key.rejectedStatus ?? 0,
  });

/** AdminService.SetProviderKey, ListProviderKeys and DeleteProviderKey (docs/providers.md, "Provider credentials at run time"); the key goes in, never out. */
export function adminProviderKeyHandlers(keys: ProviderKeys | undefined, guard: Guard): Pick<Impl, "setProviderKey" | "listProviderKeys" | "deleteProviderKey"> {
  return {
    setProviderKey: (req, ctx) =>
      guard(async () => {
        if (!keys) throw OFF();
        return create(SetProviderKeyResponseSchema, { key: info(await keys.set(req.provider, req.apiKey)) });
      })(ctx),
    listProviderKeys: (_req, ctx) =>
      guard(async () => {
        if (!keys) throw OFF();
        return create(ListProviderKeysResponseSchema, { keys: (await keys.list()).map(info) });
      })(ctx),
    deleteProviderKey: (req, ctx) =>
      guard(async () => {
        if (!keys) throw OFF();
        return create(DeleteProviderKeyResponseSchema, { deleted: await keys.delete(req.provider) });
      })(ctx),
  };
}
