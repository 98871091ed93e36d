import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  type Batch,
  BatchEndpoint,
  BatchFileSchema,
  BatchRequestCountsSchema,
  BatchSchema,
  type BatchService,
  BatchStatus,
  CancelBatchResponseSchema,
  CreateBatchResponseSchema,
  GetBatchResponseSchema,
  GetFileContentResponseSchema,
  ListBatchesResponseSchema,
  UploadFileResponseSchema,
} from "../../../gen/sluice/v1/batch_service_pb.js";
import { type BatchOperations, DEFAULT_PAGE } from "../../batch/batch-operations.js";
import type { StoredBatch, StoredFile, BatchStatus as StoredStatus } from "../../batch/batch-store.js";
import { uploadWhole } from "../../batch/batch-upload.js";
import type { CallLayer } from "../../call/call-layer.js";
import { GatewayError } from "../../core/errors.js";
import { toConnectError } from "./connect-errors.js";
import { callerOf } from "./handler-call.js";
import { checkRequestText } from "./request-text.js";

const PATHS: Readonly<Record<number, string>> = { [BatchEndpoint.CHAT_COMPLETIONS]: "/v1/chat/completions", [BatchEndpoint.EMBEDDINGS]: "/v1/embeddings" };
const ENDPOINTS: Readonly<Record<string, BatchEndpoint>> = { "/v1/chat/completions": BatchEndpoint.CHAT_COMPLETIONS, "/v1/embeddings": BatchEndpoint.EMBEDDINGS };
const STATUSES: Readonly<Record<StoredStatus, BatchStatus>> = {
  validating: BatchStatus.VALIDATING,
  in_progress: BatchStatus.IN_PROGRESS,
  finalizing: BatchStatus.FINALIZING,
  completed: BatchStatus.COMPLETED,
  failed: BatchStatus.FAILED,
  cancelling: BatchStatus.CANCELLING,
  cancelled: BatchStatus.CANCELLED,
  expired: BatchStatus.EXPIRED,
};

const at = (seconds: number | null) => (seconds === null ? undefined : timestampFromMs(seconds * 1000));

function fileOf(file: StoredFile) {
  return create(BatchFileSchema, { id: file.id, bytes: BigInt(file.bytes), filename: file.filename, purpose: file.purpose, createdAt: timestampFromMs(file.createdAt * 1000) });
}

/** The stored batch as the typed message (the facade's Batch object, field for field). */
export function batchOf(batch: StoredBatch): Batch {
  const t = batch.times;
  return create(BatchSchema, {
    id: batch.id,
    endpoint: ENDPOINTS[batch.endpoint] ?? BatchEndpoint.UNSPECIFIED,
    endpointPath: batch.endpoint,
    inputFileId: batch.inputFileId,
    status: STATUSES[batch.status],
    requestCounts: create(BatchRequestCountsSchema, batch.counts),
    outputFileId: batch.outputFileId ?? "",
    errorFileId: batch.errorFileId ?? "",
    metadata: { ...batch.metadata },
    createdAt: timestampFromMs(t.createdAt * 1000),
    inProgressAt: at(t.inProgressAt),
    expiresAt: at(t.expiresAt),
    completedAt: at(t.completedAt),
    cancellingAt: at(t.cancellingAt),
    cancelledAt: at(t.cancelledAt),
  });
}

/**
 * sluice.v1.BatchService: the Batch API's operations (batch/batch-operations.ts)
 * for gRPC callers, the caller's key their owner, as the facade's routes
 * call them. Only the wire differs: typed messages instead of OpenAI JSON.
 */
export function createBatchService(calls: CallLayer, operations: BatchOperations): ServiceImpl<typeof BatchService> {
  const asCaller =
    <R>(work: (owner: string) => Promise<R>, req?: object) =>
    async (ctx: HandlerContext): Promise<R> => {
      const principal = await callerOf(calls, ctx);
      try {
        // Ids, names and metadata name stored things: no control character reaches the database (the file's bytes are checked as they are read).
        if (req) checkRequestText(req);
        return await work(principal?.sha256 ?? "");
      } catch (error) {
        throw toConnectError(error);
      }
    };
  return {
    uploadFile: (req, ctx) =>
      asCaller(async (owner) => {
        // Checked (UTF-8, each line) in a worker and stored a slice at a time, as the facade's streamed upload is; its size is known before.
        return create(UploadFileResponseSchema, { file: fileOf(await uploadWhole(await operations.upload(owner, req.content.byteLength), req.content, req.filename)) });
      }, req)(ctx),
    getFileContent: (req, ctx) =>
      asCaller(async (owner) => {
        // One message holds the whole file (bounded by batch.maxFileBytes and the RPC's message limit); the facade streams it.
        const chunks: Buffer[] = [];
        for await (const chunk of await operations.fileContent(owner, req.id)) chunks.push(Buffer.from(chunk, "utf8"));
        return create(GetFileContentResponseSchema, { content: Buffer.concat(chunks) });
      }, req)(ctx),
    createBatch: (req, ctx) =>
      asCaller(async (owner) => {
        const endpoint = PATHS[req.endpoint];
        if (!endpoint) throw new GatewayError("invalid_request", "endpoint: CHAT_COMPLETIONS or EMBEDDINGS", { field: "endpoint" });
        const metadata = Object.keys(req.metadata).length > 0 ? req.metadata : null;
        return create(CreateBatchResponseSchema, { batch: batchOf(await operations.create(owner, { inputFileId: req.inputFileId, endpoint, metadata })) });
      }, req)(ctx),
    getBatch: (req, ctx) => asCaller(async (owner) => create(GetBatchResponseSchema, { batch: batchOf(await operations.batch(owner, req.id)) }), req)(ctx),
    listBatches: (req, ctx) =>
      asCaller(async (owner) => {
        const page = await operations.list(owner, req.after === "" ? undefined : req.after, req.limit === 0 ? DEFAULT_PAGE : req.limit);
        return create(ListBatchesResponseSchema, { batches: page.batches.map(batchOf), hasMore: page.hasMore });
      }, req)(ctx),
    cancelBatch: (req, ctx) => asCaller(async (owner) => create(CancelBatchResponseSchema, { batch: batchOf(await operations.cancel(owner, req.id)) }), req)(ctx),
  };
}
