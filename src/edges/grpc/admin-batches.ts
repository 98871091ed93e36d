import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { type AdminService, KeyBatchSchema, ListAllBatchesResponseSchema } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { DEFAULT_PAGE, MAX_PAGE } from "../../batch/batch-operations.js";
import type { BatchStore } from "../../batch/batch-store.js";
import { GatewayError } from "../../core/errors.js";
import { batchOf } from "./batch-service.js";

type Guard = <R>(work: () => Promise<R>) => (ctx: HandlerContext) => Promise<R>;
type Impl = Omit<ServiceImpl<typeof AdminService>, "watchStats">;

/** What the admin's batch list needs: the store, and a key's name from its SHA-256. */
export interface AdminBatches {
  readonly store: BatchStore;
  readonly keyName: (sha256: string) => string | undefined;
}

/** AdminService.ListAllBatches: every key's batches for the console, each named by its key. */
export function adminBatchHandlers(batches: AdminBatches | undefined, guard: Guard): Pick<Impl, "listAllBatches"> {
  return {
    listAllBatches: (req, ctx) =>
      guard(async () => {
        if (!batches) throw new GatewayError("failed_precondition", "batches are not served by this gateway");
        const limit = req.limit === 0 ? DEFAULT_PAGE : req.limit;
        if (limit > MAX_PAGE) throw new GatewayError("invalid_request", `limit: at most ${MAX_PAGE}`, { field: "limit" });
        const page = await batches.store.list(undefined, req.after === "" ? undefined : req.after, limit);
        return create(ListAllBatchesResponseSchema, {
          batches: page.batches.map((b) => create(KeyBatchSchema, { batch: batchOf(b), key: b.owner === "" ? "" : (batches.keyName(b.owner) ?? "(removed)") })),
          hasMore: page.hasMore,
        });
      })(ctx),
  };
}
