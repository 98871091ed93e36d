import { BATCH_ENDPOINTS, type BatchEndpoint, type BatchFileLine } from "../../batch/batch-file.js";
import { type BatchOperations, DEFAULT_PAGE } from "../../batch/batch-operations.js";
import type { StoredBatch, StoredFile } from "../../batch/batch-store.js";
import type { UploadSink } from "../../batch/batch-upload.js";
import type { CallLayer } from "../../call/call-layer.js";
import type { BatchSettings } from "../../config/settings.js";
import { GatewayError } from "../../core/errors.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { boundaryOf, createMultipartParser, type PartHeaders } from "../../http/multipart.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson, writeChunk } from "../../http/node-http.js";
import { type BodyLimits, bodyChunks } from "../../http/read-body.js";
import { readJsonBody } from "../../http/read-json.js";
import { callerOf } from "./chat-completions.js";
import { embedRequestFromOpenAi } from "./embeddings.js";
import { chatRequestFromOpenAi } from "./from-openai.js";
import { sendOpenAiError } from "./http-errors.js";

/** What the files and batches routes need: the caller's key, the operations behind them, and the limits. */
export interface BatchRoutes {
  readonly calls: CallLayer;
  readonly operations: BatchOperations;
  readonly settings: BatchSettings;
  readonly limits: BodyLimits & StructureLimits;
}

/** Room for the multipart envelope around the file (boundaries, part headers, `purpose`). */
const ENVELOPE_BYTES = 64 * 1024;

/** The file as the API shows it (`FileObject`). */
function fileObject(file: StoredFile): object {
  return { id: file.id, object: "file", bytes: file.bytes, created_at: file.createdAt, filename: file.filename, purpose: file.purpose, status: "processed", status_details: null };
}

/** The batch as the API shows it (`Batch`); times not reached are null. */
export function batchObject(batch: StoredBatch): object {
  const t = batch.times;
  return {
    id: batch.id,
    object: "batch",
    endpoint: batch.endpoint,
    errors: null,
    input_file_id: batch.inputFileId,
    completion_window: batch.completionWindow,
    status: batch.status,
    output_file_id: batch.outputFileId,
    error_file_id: batch.errorFileId,
    created_at: t.createdAt,
    in_progress_at: t.inProgressAt,
    expires_at: t.expiresAt,
    finalizing_at: t.finalizingAt,
    completed_at: t.completedAt,
    failed_at: null,
    expired_at: null,
    cancelling_at: t.cancellingAt,
    cancelled_at: t.cancelledAt,
    request_counts: batch.counts,
    metadata: batch.metadata,
  };
}

/** Runs `serve` for an identified caller (its key's hash is the owner of what it makes and sees), answering any failure in OpenAI's error shape. */
async function asCaller(req: AnyRequest, res: AnyResponse, exchange: Exchange, calls: CallLayer, serve: (owner: string) => Promise<void>): Promise<void> {
  const caller = await callerOf(req, res, exchange, calls);
  if (!caller) return;
  try {
    await serve(caller.principal?.sha256 ?? "");
  } catch (error) {
    if (!res.headersSent) sendOpenAiError(res, exchange, error);
  }
}

const answer = (res: AnyResponse, exchange: Exchange, body: unknown) => {
  exchange.code = "ok";
  sendJson(res, 200, body);
};

/** Bytes of a form's text field (`purpose`) kept at most. */
const MAX_FIELD_BYTES = 256;

/**
 * The multipart form of an upload, read as it streams in: the `file`
 * part's bytes go to `sink` (checked and stored in chunks: never held
 * whole), `purpose` is kept (a few bytes); a `purpose` other than batch
 * stops the upload the moment it is read.
 */
async function streamForm(req: AnyRequest, routes: BatchRoutes, sink: UploadSink): Promise<{ readonly purpose: string; readonly filename: string | undefined; readonly file: boolean }> {
  const boundary = boundaryOf(headerOf(req, "content-type") ?? "");
  if (boundary === undefined) throw new GatewayError("invalid_request", "content-type: send the file as multipart/form-data", { field: "file" });
  const parser = createMultipartParser(boundary);
  const max = routes.settings.maxFileBytes;
  let part: PartHeaders | undefined;
  let purpose = "";
  let filename: string | undefined;
  let file = false;
  let fileDone = false;
  try {
    for await (const chunk of bodyChunks(req, { maxRequestBytes: max + ENVELOPE_BYTES, requestTimeoutMs: routes.limits.requestTimeoutMs })) {
      for (const event of parser.push(chunk)) {
        if (event.type === "part") {
          part = event.headers;
          if (part.name === "file") {
            if (file) throw new GatewayError("invalid_request", "file: one file per upload", { field: "file" });
            file = true;
            filename = part.filename;
          }
        } else if (event.type === "data" && part?.name === "file") {
          await sink.write(event.bytes);
        } else if (event.type === "data" && part?.name === "purpose") {
          purpose += event.bytes.toString("utf8");
          if (purpose.length > MAX_FIELD_BYTES) throw new GatewayError("invalid_request", "purpose: only batch files are served here", { field: "purpose" });
        } else if (event.type === "end") {
          if (part?.name === "purpose" && purpose !== "batch") throw new GatewayError("invalid_request", "purpose: only batch files are served here", { field: "purpose" });
          if (part?.name === "file") fileDone = true;
          part = undefined;
        }
      }
    }
  } catch (error) {
    if (error instanceof GatewayError && error.code === "payload_too_large") throw new GatewayError("payload_too_large", `file: larger than ${max} bytes (batch.maxFileBytes)`, { field: "file" });
    throw error;
  }
  parser.end();
  return { purpose, filename, file: file && fileDone };
}

/**
 * `POST /v1/files`: a JSONL batch file (`purpose` batch), checked line by
 * line in a worker thread and stored in chunks as it streams in
 * (batch/batch-upload.ts), so an upload of any size never stalls other
 * streams; refused past the key's bounds on files and bytes per day, at
 * once when the declared length says so. A client that goes away mid-upload
 * ends its worker and what was stored of its file.
 */
export function uploadFile(req: AnyRequest, res: AnyResponse, exchange: Exchange, routes: BatchRoutes): Promise<void> {
  return asCaller(req, res, exchange, routes.calls, async (owner) => {
    if (boundaryOf(headerOf(req, "content-type") ?? "") === undefined) throw new GatewayError("invalid_request", "content-type: send the file as multipart/form-data", { field: "file" });
    const declared = Number(req.headers["content-length"]);
    const max = routes.settings.maxFileBytes;
    if (Number.isFinite(declared) && declared > max + ENVELOPE_BYTES) throw new GatewayError("payload_too_large", `file: larger than ${max} bytes (batch.maxFileBytes)`, { field: "file" });
    // The file is at least the declared body less the envelope's room: what the key's day is checked against before a byte is read.
    const sink = await routes.operations.upload(owner, Number.isFinite(declared) ? Math.max(0, declared - ENVELOPE_BYTES) : 0);
    try {
      const form = await streamForm(req, routes, sink);
      if (form.purpose !== "batch") throw new GatewayError("invalid_request", "purpose: only batch files are served here", { field: "purpose" });
      if (!form.file) throw new GatewayError("invalid_request", "file: missing (a file part named file)", { field: "file" });
      answer(res, exchange, fileObject(await sink.finish(form.filename ?? "")));
    } catch (error) {
      await sink.abort();
      throw error;
    }
  });
}

/** `DELETE /v1/files/{id}`: frees the key's room for another file (batch.maxFilesPerKey); a batch made from it keeps its lines. */
export function deleteFile(req: AnyRequest, res: AnyResponse, exchange: Exchange, routes: BatchRoutes, id: string): Promise<void> {
  return asCaller(req, res, exchange, routes.calls, async (owner) => {
    await routes.operations.deleteFile(owner, id);
    answer(res, exchange, { id, object: "file", deleted: true });
  });
}

/** `GET /v1/files/{id}`. */
export function getFile(req: AnyRequest, res: AnyResponse, exchange: Exchange, routes: BatchRoutes, id: string): Promise<void> {
  return asCaller(req, res, exchange, routes.calls, async (owner) => answer(res, exchange, fileObject(await routes.operations.file(owner, id))));
}

/** `GET /v1/files/{id}/content`: the file's bytes (an input file as uploaded, an output or error file as JSONL). */
export function fileContent(req: AnyRequest, res: AnyResponse, exchange: Exchange, routes: BatchRoutes, id: string): Promise<void> {
  return asCaller(req, res, exchange, routes.calls, async (owner) => {
    const file = await routes.operations.file(owner, id);
    const chunks = await routes.operations.fileContent(owner, id);
    exchange.code = "ok";
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(file.bytes) });
    // A chunk at a time, each written once the last one drained: a 100 MiB file is never whole in memory.
    for await (const chunk of chunks) {
      if (res.destroyed) return;
      if (!writeChunk(res, chunk))
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off("drain", done);
            res.off("close", done);
            resolve();
          };
          res.on("drain", done);
          res.on("close", done);
        });
    }
    res.end();
  });
}

/** A batch's `metadata` from JSON: absent or an object (its pairs are checked by the operations). */
function metadataOf(value: unknown): Record<string, unknown> | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) throw new GatewayError("invalid_request", "metadata: must be an object of string values", { field: "metadata" });
  return value as Record<string, unknown>;
}

/**
 * How a line's body is checked for its endpoint: decoded as the
 * interactive route decodes it, and a chat line must not stream. Given to
 * the batch operations by the composition, so the gRPC BatchService checks
 * files the same way.
 */
export function checkOpenAiLine(limits: StructureLimits): (line: BatchFileLine, endpoint: BatchEndpoint) => void {
  return (line, endpoint) => {
    if (endpoint === "/v1/embeddings") embedRequestFromOpenAi(line.body);
    else if (chatRequestFromOpenAi(line.body, limits).stream) throw new GatewayError("invalid_request", `input_file_id: line ${line.line}: body.stream: a batch line is not streamed`, { field: "input_file_id" });
  };
}

/** `POST /v1/batches`: checks the input file against the endpoint, stores the batch with its lines, and queues it. */
export function createBatch(req: AnyRequest, res: AnyResponse, exchange: Exchange, routes: BatchRoutes): Promise<void> {
  return asCaller(req, res, exchange, routes.calls, async (owner) => {
    const json = await readJsonBody(req, routes.limits);
    if (typeof json !== "object" || json === null || Array.isArray(json)) throw new GatewayError("invalid_request", "request body: must be a JSON object");
    const b = json as Record<string, unknown>;
    if (typeof b.endpoint !== "string" || !(BATCH_ENDPOINTS as readonly string[]).includes(b.endpoint)) {
      throw new GatewayError("invalid_request", `endpoint: must be one of ${BATCH_ENDPOINTS.join(", ")}`, { field: "endpoint" });
    }
    if (b.completion_window !== "24h") throw new GatewayError("invalid_request", "completion_window: must be 24h", { field: "completion_window" });
    if (typeof b.input_file_id !== "string") throw new GatewayError("invalid_request", "input_file_id: must be a file id", { field: "input_file_id" });
    for (const key of Object.keys(b)) {
      if (!["endpoint", "completion_window", "input_file_id", "metadata"].includes(key)) throw new GatewayError("invalid_request", `${key}: not supported here`, { field: key });
    }
    const batch = await routes.operations.create(owner, { inputFileId: b.input_file_id, endpoint: b.endpoint, metadata: metadataOf(b.metadata) });
    answer(res, exchange, batchObject(batch));
  });
}

/** `GET /v1/batches/{id}`. */
export function getBatch(req: AnyRequest, res: AnyResponse, exchange: Exchange, routes: BatchRoutes, id: string): Promise<void> {
  return asCaller(req, res, exchange, routes.calls, async (owner) => answer(res, exchange, batchObject(await routes.operations.batch(owner, id))));
}

/** `GET /v1/batches?after=&limit=`: the caller's batches, newest first, as OpenAI's cursor page. */
export function listBatches(req: AnyRequest, res: AnyResponse, exchange: Exchange, routes: BatchRoutes): Promise<void> {
  return asCaller(req, res, exchange, routes.calls, async (owner) => {
    const query = new URL(req.url ?? "/", "http://x").searchParams;
    const limitText = query.get("limit");
    const { batches, hasMore } = await routes.operations.list(owner, query.get("after") ?? undefined, limitText === null ? DEFAULT_PAGE : Number(limitText));
    answer(res, exchange, { object: "list", data: batches.map(batchObject), first_id: batches[0]?.id ?? null, last_id: batches.at(-1)?.id ?? null, has_more: hasMore });
  });
}

/** `POST /v1/batches/{id}/cancel`: no new lines start; running ones finish; then `cancelled` with the files of what finished. */
export function cancelBatch(req: AnyRequest, res: AnyResponse, exchange: Exchange, routes: BatchRoutes, id: string): Promise<void> {
  return asCaller(req, res, exchange, routes.calls, async (owner) => answer(res, exchange, batchObject(await routes.operations.cancel(owner, id))));
}
