import type { BatchSettings } from "../config/settings.js";
import { checkClientText, cleanClientText, quoteClientValue } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";
import type { StructureLimits } from "../core/structure-limits.js";
import { BATCH_ENDPOINTS, type BatchEndpoint, type BatchFileLine, batchLinesOf, createBatchLineReader } from "./batch-file.js";
import type { BatchRunner } from "./batch-runner.js";
import { type BatchStore, randomHex, type StoredBatch, type StoredFile } from "./batch-store.js";
import { openUpload, type UploadSink } from "./batch-upload.js";

/** OpenAI's bounds on a batch's metadata. */
export const MAX_METADATA = { pairs: 16, key: 64, value: 512 };
/** Batches listed per page at most, and when the caller names no size (OpenAI's default). */
export const MAX_PAGE = 100;
export const DEFAULT_PAGE = 20;

/** What creating a batch asks for, whatever edge it came through. */
export interface NewBatch {
  readonly inputFileId: string;
  readonly endpoint: string;
  /** Checked here: at most 16 string values (checkMetadata). */
  readonly metadata: Readonly<Record<string, unknown>> | null;
}

export interface BatchOperationsOptions {
  readonly store: BatchStore;
  readonly runner: BatchRunner;
  readonly settings: BatchSettings;
  readonly limits: StructureLimits;
  /** Throws `invalid_request` for a line whose body is not a request of `endpoint` (the OpenAI edge decodes it as its route would). */
  readonly checkLine: (line: BatchFileLine, endpoint: BatchEndpoint) => void;
}

/**
 * The Batch API's operations, edge-neutral: the facade's HTTP routes and
 * the gRPC BatchService both call these, so a file or batch is checked,
 * stored and run the same way whichever way it came. Every call names the
 * owner (the caller key's SHA-256, "" without keys): a key reaches only its
 * own files and batches, and anything else is `not_found`, as an unknown
 * id is.
 */
export interface BatchOperations {
  /**
   * Opens an upload: the file is checked line by line in a worker thread and stored in chunks as it streams in
   * (batch-upload.ts); refused past the key's upload bounds, at once when `declaredBytes` (the file's size as far as
   * the request tells before it is read; 0: unknown) would pass them.
   */
  upload(owner: string, declaredBytes?: number): Promise<UploadSink>;
  file(owner: string, id: string): Promise<StoredFile>;
  /** The file's text, a chunk at a time. */
  fileContent(owner: string, id: string): Promise<AsyncIterable<string>>;
  /** Removes a file of the caller's (a batch made from it keeps its lines). */
  deleteFile(owner: string, id: string): Promise<void>;
  /** Checks the input file against the endpoint, stores the batch with its lines, and queues it. */
  create(owner: string, batch: NewBatch): Promise<StoredBatch>;
  batch(owner: string, id: string): Promise<StoredBatch>;
  list(owner: string, after: string | undefined, limit: number): Promise<{ readonly batches: StoredBatch[]; readonly hasMore: boolean }>;
  /** No new lines start; running ones finish; then `cancelled` with the files of what finished. */
  cancel(owner: string, id: string): Promise<StoredBatch>;
}

const notFound = (what: string, id: string) => new GatewayError("not_found", `no ${what} ${quoteClientValue(id)}`);

/** An id from the client: one with a control character names nothing stored (and PostgreSQL could not even compare it). */
const idOf = (id: string, field: string) => checkClientText(id, field);

/** A batch's `metadata`: at most 16 string pairs, as OpenAI bounds them. */
export function checkMetadata(metadata: Readonly<Record<string, unknown>>): Record<string, string> {
  const bad = () => new GatewayError("invalid_request", `metadata: at most ${MAX_METADATA.pairs} string values, keys of at most ${MAX_METADATA.key} characters and values of at most ${MAX_METADATA.value}`, { field: "metadata" });
  const entries = Object.entries(metadata);
  if (entries.length > MAX_METADATA.pairs) throw bad();
  for (const [k, v] of entries) {
    if (typeof v !== "string" || k.length > MAX_METADATA.key || v.length > MAX_METADATA.value) throw bad();
    checkClientText(k, "metadata");
    checkClientText(v, `metadata.${k}`, "text");
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

export function createBatchOperations(options: BatchOperationsOptions): BatchOperations {
  const { store, settings } = options;

  /** Every line's url is the batch's endpoint and its body decodes as that endpoint's request (not streamed). */
  const checkLines = (lines: readonly BatchFileLine[], endpoint: BatchEndpoint) => {
    for (const line of lines) {
      const at = (why: string) => new GatewayError("invalid_request", `input_file_id: line ${line.line}: ${why}`, { field: "input_file_id" });
      if (line.url !== endpoint) throw at(`url ${line.url} differs from the batch's endpoint ${endpoint}`);
      try {
        options.checkLine(line, endpoint);
      } catch (error) {
        if (error instanceof GatewayError && error.code === "invalid_request" && !error.message.startsWith("input_file_id:")) throw at(`body.${error.message}`);
        throw error;
      }
    }
  };

  const operations: BatchOperations = {
    async upload(owner, declaredBytes) {
      const sink = await openUpload({ store, settings, limits: options.limits }, owner, declaredBytes);
      return {
        write: (bytes) => sink.write(bytes),
        finish: (filename) => sink.finish(cleanClientText((filename || "batch.jsonl").slice(0, 256))),
        abort: () => sink.abort(),
      };
    },
    async file(owner, id) {
      idOf(id, "file_id");
      const file = await store.file(id, owner);
      if (!file) throw notFound("file", id);
      return file;
    },
    async fileContent(owner, id) {
      idOf(id, "file_id");
      const chunks = await store.fileChunks(id, owner);
      if (chunks === undefined) throw notFound("file", id);
      return chunks;
    },
    async deleteFile(owner, id) {
      idOf(id, "file_id");
      if (!(await store.deleteFile(id, owner))) throw notFound("file", id);
    },
    async create(owner, batch) {
      if (!(BATCH_ENDPOINTS as readonly string[]).includes(batch.endpoint)) {
        throw new GatewayError("invalid_request", `endpoint: must be one of ${BATCH_ENDPOINTS.join(", ")}`, { field: "endpoint" });
      }
      const endpoint = batch.endpoint as BatchEndpoint;
      idOf(batch.inputFileId, "input_file_id");
      const metadata = batch.metadata === null ? null : checkMetadata(batch.metadata);
      if ((await store.unfinished(owner)) >= settings.maxBatchesPerKey) {
        throw new GatewayError("rate_limited", `this key already has ${settings.maxBatchesPerKey} batches unfinished (batch.maxBatchesPerKey)`);
      }
      const file = await store.file(batch.inputFileId, owner);
      if (file?.purpose !== "batch") throw notFound("batch input file", batch.inputFileId);
      // Read back a chunk at a time and checked a page at a time, inside the transaction that stores the lines: a
      // 48,000-line file is never whole in memory and never holds the event loop.
      const created = await store.createBatchFromFile({ id: `batch_${randomHex()}`, owner, endpoint, inputFileId: file.id, completionWindow: "24h", metadata }, async function* (chunks) {
        for await (const page of batchLinesOf(chunks, createBatchLineReader(settings, options.limits))) {
          checkLines(page, endpoint);
          yield page.map((l) => ({ customId: l.customId, line: l.line, body: JSON.stringify(l.body) }));
        }
      });
      options.runner.add(created.id);
      return created;
    },
    async batch(owner, id) {
      idOf(id, "batch_id");
      const batch = await store.batch(id, owner);
      if (!batch) throw notFound("batch", id);
      return batch;
    },
    async list(owner, after, limit) {
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) throw new GatewayError("invalid_request", `limit: must be an integer from 1 to ${MAX_PAGE}`, { field: "limit" });
      if (after !== undefined) idOf(after, "after");
      return store.list(owner, after, limit);
    },
    async cancel(owner, id) {
      idOf(id, "batch_id");
      const batch = await store.cancel(id, owner);
      if (!batch) throw notFound("batch", id);
      if (batch.status === "cancelling") options.runner.cancel(id);
      return batch;
    },
  };
  return operations;
}
