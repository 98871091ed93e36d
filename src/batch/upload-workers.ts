import { EventEmitter } from "node:events";
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { GatewayError } from "../core/errors.js";
import { workerEntry } from "../workers/worker-entry.js";
import type { UploadCheckConfig } from "./upload-check.js";
import type { UploadWorkerAnswer, UploadWorkerCall } from "./upload-worker.js";

/** An upload's check, run in a worker thread of its own; one call in flight at a time. */
export interface UploadChecker {
  /** The next bytes (copied, then moved to the worker): resolves with the checked pieces to store. */
  push(bytes: Uint8Array): Promise<string[]>;
  /** The file ended: resolves with the last pieces. */
  end(): Promise<string[]>;
  /** Terminates the worker and frees its slot; resolves once it has stopped. Idempotent, never throws. */
  close(): Promise<void>;
}

export interface UploadCheckerOptions {
  /** The worker's module (tests give a worker that hangs or dies); the real one by default. */
  readonly entry?: URL;
  /** How long one call may take before the worker is deemed stuck; CALL_DEADLINE_MS by default. */
  readonly deadlineMs?: number;
}

/**
 * Upload workers alive at once at most, in the whole process. A worker
 * per upload rather than a shared pool: an upload's check holds state for
 * as long as the upload lasts (the custom_ids seen, the line in progress),
 * so a pooled thread would be held just as long anyway; a thread of its own
 * can be terminated the moment its client vanishes or it misbehaves
 * without touching anyone else's upload; and starting one (~30 ms) is
 * nothing beside the seconds a large upload takes. The bound keeps a
 * burst of uploads from taking every core (and a worker's memory each)
 * from the thread that relays streams: one more is refused, to retry.
 */
export const MAX_UPLOAD_WORKERS = Math.max(2, availableParallelism());
/** One call (a socket read's bytes, or the end) takes milliseconds; a worker silent this long is stuck. */
export const CALL_DEADLINE_MS = 15_000;
/** A worker's heap at most: a line (1 MiB), a piece being gathered (1 MiB) and up to 50,000 custom_ids fit many times over. */
const WORKER_HEAP_MB = 192;

let live = 0;

/** "open" and "close" as upload workers start and stop (tests wait on these); `uploadWorkersLive()` is the count. */
export const uploadWorkerEvents = new EventEmitter();

/** Upload workers alive now. */
export function uploadWorkersLive(): number {
  return live;
}

const failed = (why: string) => new GatewayError("internal", `file: the upload could not be checked (${why}); nothing of it was stored, upload it again`, { field: "file" });

/**
 * Starts the check of one upload in a worker thread. Every call has a
 * deadline: a worker that misses it, or exits, or fails, is terminated and
 * the call (and every later one) rejects with `internal`, naming what
 * happened; a fault of the file rejects with the worker's own GatewayError
 * (`file: line N: …`). The caller closes it once the upload is over,
 * however it ended.
 */
export function openUploadChecker(config: UploadCheckConfig, options: UploadCheckerOptions = {}): UploadChecker {
  if (live >= MAX_UPLOAD_WORKERS) throw new GatewayError("overloaded", `file: ${MAX_UPLOAD_WORKERS} uploads are being checked at once on this gateway; retry shortly`, { retryAfterMs: 1_000 });
  const deadlineMs = options.deadlineMs ?? CALL_DEADLINE_MS;
  const worker = new Worker(options.entry ?? workerEntry(import.meta.url, "./upload-worker.js"), {
    workerData: config,
    resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
    stdout: false,
    stderr: false,
  });
  // The upload's request keeps the process busy while it lasts; the thread itself never holds an exit (a drain ends the upload, and so it).
  worker.unref();
  live++;
  uploadWorkerEvents.emit("open");
  let seq = 0;
  let broken: GatewayError | undefined;
  let waiting: { readonly seq: number; readonly resolve: (pieces: string[]) => void; readonly reject: (error: GatewayError) => void; readonly timer: NodeJS.Timeout } | undefined;
  let stopped: Promise<void> | undefined;

  const close = (): Promise<void> => {
    stopped ??= worker
      .terminate()
      .catch(() => undefined)
      .then(() => {
        live--;
        uploadWorkerEvents.emit("close");
      });
    return stopped;
  };
  const breakWith = (error: GatewayError) => {
    broken ??= error;
    const w = waiting;
    waiting = undefined;
    if (w) {
      clearTimeout(w.timer);
      w.reject(broken);
    }
    void close();
  };

  worker.on("message", (answer: UploadWorkerAnswer) => {
    const w = waiting;
    if (!w || answer.seq !== w.seq) return;
    waiting = undefined;
    clearTimeout(w.timer);
    if ("pieces" in answer) w.resolve(answer.pieces);
    else w.reject(new GatewayError(answer.fault.code, answer.fault.message, answer.fault.field === undefined ? {} : { field: answer.fault.field }));
  });
  worker.on("error", (error: NodeJS.ErrnoException) => breakWith(failed(error.code === "ERR_WORKER_OUT_OF_MEMORY" ? "its worker ran out of memory" : "its worker failed")));
  worker.on("exit", () => breakWith(failed("its worker stopped")));

  const call = (message: UploadWorkerCall, transfer: ArrayBuffer[]): Promise<string[]> => {
    if (broken) return Promise.reject(broken);
    if (waiting) return Promise.reject(failed("a call was made before the last one was answered"));
    return new Promise<string[]>((resolve, reject) => {
      const timer = setTimeout(() => breakWith(failed(`its worker did not answer within ${deadlineMs} ms`)), deadlineMs);
      waiting = { seq: message.seq, resolve, reject, timer };
      worker.postMessage(message, transfer);
    });
  };

  return {
    push(bytes) {
      // A copy of exactly these bytes, moved (not copied again) to the worker: the caller's buffer may be a slice of a larger one, reused later.
      const own = new Uint8Array(bytes);
      return call({ seq: ++seq, bytes: own }, [own.buffer as ArrayBuffer]);
    },
    end() {
      return call({ seq: ++seq, end: true }, []);
    },
    close,
  };
}
