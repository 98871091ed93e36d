import type { BatchSettings } from "../config/settings.js";
import { GatewayError } from "../core/errors.js";
import type { StructureLimits } from "../core/structure-limits.js";
import { type BatchStore, CHUNK_CHARS, randomHex, type StoredFile } from "./batch-store.js";
import type { UploadCheckConfig } from "./upload-check.js";
import { openUploadChecker, type UploadChecker } from "./upload-workers.js";

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
  /** How an upload's check is started (tests give a worker that hangs or dies); a worker thread of its own by default. */
  readonly openChecker?: (config: UploadCheckConfig) => UploadChecker;
}

/**
 * Opens an upload for `owner` (the key's hash), refused first when the
 * key already stores `batch.maxFilesPerKey` files, or when what it
 * uploaded today plus `declaredBytes` (the file's size as far as the
 * request says, before a byte of it is read) passes
 * `batch.maxUploadBytesPerDay`. The file is never held: each read of the
 * socket goes to the upload's worker thread (upload-workers.ts), which
 * splits and checks it line by line (upload-check.ts), and the checked
 * text comes back in pieces of about a MiB to be stored, each counted
 * against the key's bytes of the day. The next read waits for the last
 * one's answer, so the client's sending is held back by the check and the
 * store, never by the gateway's heap; and the event loop that relays
 * streams does no more per read than pass bytes on and store a piece.
 */
export async function openUpload(deps: UploadDeps, owner: string, declaredBytes = 0): Promise<UploadSink> {
  const { store, settings } = deps;
  await store.sweepUploads();
  if ((await store.countFiles(owner, "batch")) >= settings.maxFilesPerKey) {
    throw new GatewayError("rate_limited", `this key already stores ${settings.maxFilesPerKey} batch files (batch.maxFilesPerKey); delete some first (DELETE /v1/files/{id})`);
  }
  const dayLimit = settings.maxUploadBytesPerDay;
  const overDay = () => new GatewayError("rate_limited", `this key uploaded more than ${dayLimit} bytes today (batch.maxUploadBytesPerDay); uploads are taken again from 00:00 UTC`);
  const today = await store.uploadedToday(owner);
  if (today >= dayLimit) throw overDay();
  if (today + declaredBytes > dayLimit) {
    throw new GatewayError("rate_limited", `this file (${declaredBytes} bytes) would take this key past ${dayLimit} bytes today (batch.maxUploadBytesPerDay; ${today} uploaded); uploads are taken again from 00:00 UTC`);
  }

  const checker = (deps.openChecker ?? openUploadChecker)({
    settings: { maxLines: settings.maxLines, maxLineBytes: settings.maxLineBytes, maxFileBytes: settings.maxFileBytes },
    limits: { maxRequestElements: deps.limits.maxRequestElements, maxJsonDepth: deps.limits.maxJsonDepth },
    chunkChars: CHUNK_CHARS,
  });
  const id = `file-${randomHex()}`;
  try {
    await store.beginFile({ id, owner, purpose: "batch" });
  } catch (error) {
    await checker.close();
    throw error;
  }
  let total = 0;
  let seq = 0;

  const storePieces = async (pieces: readonly string[]) => {
    for (const text of pieces) {
      if ((await store.addUploadBytes(owner, Buffer.byteLength(text))) > dayLimit) throw overDay();
      await store.putChunk(id, seq++, text);
    }
  };

  return {
    async write(bytes) {
      total += bytes.length;
      await storePieces(await checker.push(bytes));
    },
    async finish(filename) {
      await storePieces(await checker.end());
      await checker.close();
      return store.completeFile(id, filename, total);
    },
    async abort() {
      // The file goes first: once the worker is seen gone, nothing of the upload is left.
      await store.deleteFile(id, owner).catch(() => undefined);
      await checker.close();
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
