import type { BatchSettings } from "../config/settings.js";
import { GatewayError } from "../core/errors.js";
import type { StructureLimits } from "../core/structure-limits.js";
import { createBatchLineReader, LINES_PER_TURN } from "./batch-file.js";
import { type BatchStore, CHUNK_CHARS, randomHex, type StoredFile } from "./batch-store.js";

/** A batch file streaming in: checked line by line and stored in chunks as its bytes arrive. */
export interface UploadSink {
  /** The next bytes of the file; resolves once they are checked (and a full chunk stored). Throws at the first fault. */
  write(bytes: Uint8Array): Promise<void>;
  /** The file ended: its last line is checked, its last chunk stored, and it becomes visible. */
  finish(filename: string): Promise<StoredFile>;
  /** The upload failed: what was stored of it goes. Never throws. */
  abort(): Promise<void>;
}

export interface UploadDeps {
  readonly store: BatchStore;
  readonly settings: BatchSettings;
  readonly limits: StructureLimits;
}

const NEWLINE = 0x0a;
/** The bytes kept as they came (a BOM included): the file reads back byte for byte, and its size is its length. */
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Opens an upload for `owner` (the key's hash), refused first when the
 * key already stores `batch.maxFilesPerKey` files or has uploaded
 * `batch.maxUploadBytesPerDay` today. The file is never held whole: bytes
 * are split at newlines as they come, each line checked
 * (batch-file.ts) and appended to a chunk stored once it holds about a
 * MiB, with a turn of the event loop every LINES_PER_TURN lines, so a
 * 100 MiB upload costs a few MiB of heap and never stalls other streams.
 * Each stored chunk counts against the key's bytes of the day.
 */
export async function openUpload(deps: UploadDeps, owner: string): Promise<UploadSink> {
  const { store, settings } = deps;
  await store.sweepUploads();
  if ((await store.countFiles(owner, "batch")) >= settings.maxFilesPerKey) {
    throw new GatewayError("rate_limited", `this key already stores ${settings.maxFilesPerKey} batch files (batch.maxFilesPerKey); delete some first (DELETE /v1/files/{id})`);
  }
  const dayLimit = settings.maxUploadBytesPerDay;
  const overDay = () => new GatewayError("rate_limited", `this key uploaded more than ${dayLimit} bytes today (batch.maxUploadBytesPerDay); uploads are taken again from 00:00 UTC`);
  if ((await store.uploadedToday(owner)) >= dayLimit) throw overDay();

  const id = `file-${randomHex()}`;
  await store.beginFile({ id, owner, purpose: "batch" });
  const reader = createBatchLineReader(settings, deps.limits);
  let total = 0;
  let n = 0;
  let seq = 0;
  let chunk = "";
  let partial: Buffer[] = [];
  let partialBytes = 0;
  let sinceTurn = 0;

  const store_ = async () => {
    if (chunk === "") return;
    const text = chunk;
    chunk = "";
    if ((await store.addUploadBytes(owner, Buffer.byteLength(text))) > dayLimit) throw overDay();
    await store.putChunk(id, seq++, text);
  };

  /** One complete line's bytes (without its newline): checked, then kept for the chunk with `ending`. */
  const take = async (bytes: Buffer, ending: string) => {
    n++;
    let text: string;
    try {
      text = decoder.decode(bytes);
    } catch {
      throw new GatewayError("invalid_request", `file: line ${n}: not UTF-8 text`, { field: "file" });
    }
    reader.line(text, n);
    chunk += text + ending;
    if (chunk.length >= CHUNK_CHARS) await store_();
    if (++sinceTurn >= LINES_PER_TURN) {
      sinceTurn = 0;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  };

  return {
    async write(bytes) {
      total += bytes.length;
      if (total > settings.maxFileBytes) throw new GatewayError("payload_too_large", `file: larger than ${settings.maxFileBytes} bytes (batch.maxFileBytes)`, { field: "file" });
      const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      let from = 0;
      for (let at = buffer.indexOf(NEWLINE); at >= 0; at = buffer.indexOf(NEWLINE, from)) {
        const piece = buffer.subarray(from, at);
        const line = partial.length === 0 ? piece : Buffer.concat([...partial, piece]);
        partial = [];
        partialBytes = 0;
        from = at + 1;
        await take(line, "\n");
      }
      if (from < buffer.length) {
        // Copied: the caller's buffer is reused once this resolves.
        partial.push(Buffer.from(buffer.subarray(from)));
        partialBytes += buffer.length - from;
        // A line longer than any line may be (its \r included) is refused before it is all held.
        if (partialBytes > settings.maxLineBytes + 1) throw new GatewayError("invalid_request", `file: line ${n + 1}: longer than ${settings.maxLineBytes} bytes (batch.maxLineBytes)`, { field: "file" });
      }
    },
    async finish(filename) {
      if (partialBytes > 0) await take(Buffer.concat(partial), "");
      partial = [];
      reader.end();
      await store_();
      return store.completeFile(id, filename, total);
    },
    async abort() {
      partial = [];
      chunk = "";
      await store.deleteFile(id, owner).catch(() => undefined);
    },
  };
}

/** Bytes handed to an upload per write when the file arrived whole (a gRPC message): each write is a bounded piece of work. */
const SLICE_BYTES = 64 * 1024;

/** A file that arrived whole, uploaded through `sink` a slice at a time; on any fault what was stored of it goes. */
export async function uploadWhole(sink: UploadSink, bytes: Uint8Array, filename: string): Promise<StoredFile> {
  try {
    for (let at = 0; at < bytes.byteLength; at += SLICE_BYTES) await sink.write(bytes.subarray(at, at + SLICE_BYTES));
    return await sink.finish(filename);
  } catch (error) {
    await sink.abort();
    throw error;
  }
}
