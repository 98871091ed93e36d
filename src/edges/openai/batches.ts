import type { BatchRunner } from "../../batch/batch-runner.js";
import { type BatchStore, randomHex, type StoredBatch, type StoredFile } from "../../batch/batch-store.js";
import type { CallLayer } from "../../call/call-layer.js";
import type { BatchSettings } from "../../config/config.js";
import { quoteClientValue } from "../../core/client-text.js";
import { GatewayError } from "../../core/errors.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson } from "../../http/node-http.js";
import { type BodyLimits, readBody } from "../../http/read-body.js";
import { readJsonBody } from "../../http/read-json.js";
import { BATCH_ENDPOINTS, type BatchFileLine, readBatchFile } from "./batch-file.js";
import { callerOf } from "./chat-completions.js";
import { embedRequestFromOpenAi } from "./embeddings.js";
import { chatRequestFromOpenAi } from "./from-openai.js";
import { sendOpenAiError } from "./http-errors.js";

/** What the files and batches routes need: the caller's key, the database, the queue, and the limits. */
export interface BatchRoutes {
  readonly calls: CallLayer;
  readonly store: BatchStore;
  readonly runner: BatchRunner;
  readonly settings: BatchSettings;
  readonly limits: BodyLimits & StructureLimits;
}

/** Room for the multipart envelope around the file (boundaries, part headers, `purpose`). */
const ENVELOPE_BYTES = 64 * 1024;
/** OpenAI's bounds on a batch's metadata. */
const MAX_METADATA = { pairs: 16, key: 64, value: 512 };
const DEFAULT_PAGE = 20;
const MAX_PAGE = 100;

const notFound = (what: string, id: string) => new GatewayError("not_found", `no ${what} ${quoteClientValue(id)}`);

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

/** The upload's bytes, refused past batch.maxFileBytes before anything is parsed. */
async function readUpload(req: AnyRequest, routes: BatchRoutes): Promise<FormData> {
  const type = headerOf(req, "content-type") ?? "";
  if (!/^multipart\/form-data\s*;/i.test(type)) throw new GatewayError("invalid_request", "content-type: send the file as multipart/form-data", { field: "file" });
  const max = routes.settings.maxFileBytes;
  let raw: Buffer;
  try {
    raw = await readBody(req, { maxRequestBytes: max + ENVELOPE_BYTES, requestTimeoutMs: routes.limits.requestTimeoutMs });
  } catch (error) {
    if (error instanceof GatewayError && error.code === "payload_too_large") throw new GatewayError("payload_too_large", `file: larger than ${max} bytes (batch.maxFileBytes)`, { field: "file" });
    throw error;
  }
  try {
    return await new Response(raw, { headers: { "content-type": type } }).formData();
  } catch {
    throw new GatewayError("invalid_request", "request body is not valid multipart/form-data", { field: "file" });
  }
}

/** `POST /v1/files`: a JSONL batch file (`purpose` batch), checked line by line before it is stored. */
export function uploadFile(req: AnyRequest, res: AnyResponse, exchange: Exchange, routes: BatchRoutes): Promise<void> {
  return asCaller(req, res, exchange, routes.calls, async (owner) => {
    const form = await readUpload(req, routes);
    const purpose = form.get("purpose");
    if (purpose !== "batch") throw new GatewayError("invalid_request", "purpose: only batch files are served here", { field: "purpose" });
    const file = form.get("file");
    if (file === null || typeof file === "string") throw new GatewayError("invalid_request", "file: missing (a file part named file)", { field: "file" });
    if (file.size > routes.settings.maxFileBytes) throw new GatewayError("payload_too_large", `file: larger than ${routes.settings.maxFileBytes} bytes (batch.maxFileBytes)`, { field: "file" });
    let content: string;
    try {
      content = new TextDecoder("utf-8", { fatal: true }).decode(await file.arrayBuffer());
    } catch {
      throw new GatewayError("invalid_request", "file: not UTF-8 text", { field: "file" });
    }
    readBatchFile(content, routes.settings, routes.limits);
    const stored = await routes.store.putFile({ id: `file-${randomHex()}`, owner, purpose: "batch", filename: (file.name || "batch.jsonl").slice(0, 256), bytes: file.size }, content);
    answer(res, exchange, fileObject(stored));
  });
}

/** `GET /v1/files/{id}`. */
export function getFile(req: AnyRequest, res: AnyResponse, exchange: Exchange, routes: BatchRoutes, id: string): Promise<void> {
  return asCaller(req, res, exchange, routes.calls, async (owner) => {
    const file = await routes.store.file(id, owner);
    if (!file) throw notFound("file", id);
    answer(res, exchange, fileObject(file));
  });
}

/** `GET /v1/files/{id}/content`: the file's bytes (an input file as uploaded, an output or error file as JSONL). */
export function fileContent(req: AnyRequest, res: AnyResponse, exchange: Exchange, routes: BatchRoutes, id: string): Promise<void> {
  return asCaller(req, res, exchange, routes.calls, async (owner) => {
    const content = await routes.store.fileContent(id, owner);
    if (content === undefined) throw notFound("file", id);
    exchange.code = "ok";
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(Buffer.byteLength(content)) });
    res.end(content);
  });
}

/** A batch's `metadata`: at most 16 string pairs, as OpenAI bounds them. */
function metadataOf(value: unknown): Record<string, string> | null {
  if (value === undefined || value === null) return null;
  const bad = () => new GatewayError("invalid_request", `metadata: at most ${MAX_METADATA.pairs} string values, keys of at most ${MAX_METADATA.key} characters and values of at most ${MAX_METADATA.value}`, { field: "metadata" });
  if (typeof value !== "object" || Array.isArray(value)) throw bad();
  const entries = Object.entries(value);
  if (entries.length > MAX_METADATA.pairs) throw bad();
  for (const [k, v] of entries) if (typeof v !== "string" || k.length > MAX_METADATA.key || v.length > MAX_METADATA.value) throw bad();
  return Object.fromEntries(entries) as Record<string, string>;
}

/** Every line's url is the batch's endpoint and its body decodes as that endpoint's request (not streamed). */
function checkLines(lines: readonly BatchFileLine[], endpoint: string, limits: StructureLimits): void {
  for (const line of lines) {
    const at = (why: string) => new GatewayError("invalid_request", `input_file_id: line ${line.line}: ${why}`, { field: "input_file_id" });
    if (line.url !== endpoint) throw at(`url ${line.url} differs from the batch's endpoint ${endpoint}`);
    try {
      if (endpoint === "/v1/embeddings") embedRequestFromOpenAi(line.body);
      else if (chatRequestFromOpenAi(line.body, limits).stream) throw at("body.stream: a batch line is not streamed");
    } catch (error) {
      if (error instanceof GatewayError && error.code === "invalid_request" && !error.message.startsWith("input_file_id:")) throw at(`body.${error.message}`);
      throw error;
    }
  }
}

/** `POST /v1/batches`: checks the input file against the endpoint, stores the batch with its lines, and queues it. */
export function createBatch(req: AnyRequest, res: AnyResponse, exchange: Exchange, routes: BatchRoutes): Promise<void> {
  return asCaller(req, res, exchange, routes.calls, async (owner) => {
    const json = await readJsonBody(req, routes.limits);
    if (typeof json !== "object" || json === null || Array.isArray(json)) throw new GatewayError("invalid_request", "request body: must be a JSON object");
    const b = json as Record<string, unknown>;
    const endpoint = b.endpoint;
    if (typeof endpoint !== "string" || !(BATCH_ENDPOINTS as readonly string[]).includes(endpoint)) {
      throw new GatewayError("invalid_request", `endpoint: must be one of ${BATCH_ENDPOINTS.join(", ")}`, { field: "endpoint" });
    }
    if (b.completion_window !== "24h") throw new GatewayError("invalid_request", "completion_window: must be 24h", { field: "completion_window" });
    if (typeof b.input_file_id !== "string") throw new GatewayError("invalid_request", "input_file_id: must be a file id", { field: "input_file_id" });
    for (const key of Object.keys(b)) {
      if (!["endpoint", "completion_window", "input_file_id", "metadata"].includes(key)) throw new GatewayError("invalid_request", `${key}: not supported here`, { field: key });
    }
    const metadata = metadataOf(b.metadata);
    const file = await routes.store.file(b.input_file_id, owner);
    if (!file || file.purpose !== "batch") throw notFound("batch input file", b.input_file_id);
    const lines = readBatchFile((await routes.store.fileContent(file.id, owner)) ?? "", routes.settings, routes.limits);
    checkLines(lines, endpoint, routes.limits);
    if ((await routes.store.unfinished(owner)) >= routes.settings.maxBatchesPerKey) {
      throw new GatewayError("rate_limited", `this key already has ${routes.settings.maxBatchesPerKey} batches unfinished (batch.maxBatchesPerKey)`);
    }
    const batch = await routes.store.createBatch(
      { id: `batch_${randomHex()}`, owner, endpoint, inputFileId: file.id, completionWindow: "24h", metadata },
      lines.map((l) => ({ customId: l.customId, line: l.line, body: JSON.stringify(l.body) })),
    );
    routes.runner.add(batch.id);
    answer(res, exchange, batchObject(batch));
  });
}

/** `GET /v1/batches/{id}`. */
export function getBatch(req: AnyRequest, res: AnyResponse, exchange: Exchange, routes: BatchRoutes, id: string): Promise<void> {
  return asCaller(req, res, exchange, routes.calls, async (owner) => {
    const batch = await routes.store.batch(id, owner);
    if (!batch) throw notFound("batch", id);
    answer(res, exchange, batchObject(batch));
  });
}

/** `GET /v1/batches?after=&limit=`: the caller's batches, newest first, as OpenAI's cursor page. */
export function listBatches(req: AnyRequest, res: AnyResponse, exchange: Exchange, routes: BatchRoutes): Promise<void> {
  return asCaller(req, res, exchange, routes.calls, async (owner) => {
    const query = new URL(req.url ?? "/", "http://x").searchParams;
    const limitText = query.get("limit");
    const limit = limitText === null ? DEFAULT_PAGE : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) throw new GatewayError("invalid_request", `limit: must be an integer from 1 to ${MAX_PAGE}`, { field: "limit" });
    const { batches, hasMore } = await routes.store.list(owner, query.get("after") ?? undefined, limit);
    answer(res, exchange, { object: "list", data: batches.map(batchObject), first_id: batches[0]?.id ?? null, last_id: batches.at(-1)?.id ?? null, has_more: hasMore });
  });
}

/** `POST /v1/batches/{id}/cancel`: no new lines start; running ones finish; then `cancelled` with the files of what finished. */
export function cancelBatch(req: AnyRequest, res: AnyResponse, exchange: Exchange, routes: BatchRoutes, id: string): Promise<void> {
  return asCaller(req, res, exchange, routes.calls, async (owner) => {
    const batch = await routes.store.cancel(id, owner);
    if (!batch) throw notFound("batch", id);
    if (batch.status === "cancelling") routes.runner.cancel(id);
    answer(res, exchange, batchObject(batch));
  });
}
