import { Worker } from "node:worker_threads";
import { GatewayError } from "../core/errors.js";
import { workerEntry } from "../workers/worker-entry.js";
import { receivedError, type WorkerReply, type WorkerRequest } from "./pglite-messages.js";
import type { PgliteWorkerData } from "./pglite-worker.js";

/** One request to the worker, without the id this file gives it. */
export type ThreadRequest = WorkerRequest extends infer R ? (R extends { readonly id: number } ? Omit<R, "id"> : never) : never;

/** One worker running one PGlite: its calls, until it stops. */
export interface PgliteThread {
  call(request: ThreadRequest): Promise<unknown>;
  /** Closes the database, then the worker. */
  close(): Promise<void>;
}

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

/** Set by the test hook: the next call's worker is terminated once the call is on its way. */
let crashArmed = false;

/**
 * Test hook: the embedded database's worker dies (terminated) right after
 * the next call is sent to it, as a crash of PGlite would, so a test can
 * prove that what was in flight is retried into the replacement.
 */
export function crashEmbeddedWorkerOnNextCall(): void {
  crashArmed = true;
}

/**
 * Starts a worker with PGlite on `dataDir` (in memory without) and resolves
 * once it is open (within `openMs`). Every call has `callMs`: a call past it means the
 * worker is stuck (PGlite cannot be interrupted from outside), and a stuck
 * worker is as good as a crashed one. Either way the worker is terminated,
 * every pending call rejects with `store_unavailable`, and `onLost` is
 * told, so the owner starts a replacement. The worker is referenced (keeps
 * the process alive) only while a call waits on it.
 */
export function startPgliteThread(dataDir: string | undefined, deadlines: { readonly openMs: number; readonly callMs: number }, onLost: (reason: string) => void): Promise<PgliteThread> {
  const deadlineMs = deadlines.callMs;
  const worker = new Worker(workerEntry(import.meta.url, "./pglite-worker.js"), { workerData: { dataDir } satisfies PgliteWorkerData });
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let gone = false;
  let closing = false;
  let dying = false;
  let opened: { resolve: (thread: PgliteThread) => void; reject: (error: Error) => void } | undefined;
  const opening = new Promise<PgliteThread>((resolve, reject) => (opened = { resolve, reject }));
  const openTimer = setTimeout(() => lose(`it did not open within ${deadlines.openMs} ms`), deadlines.openMs);

  const idle = () => {
    if (pending.size === 0 && !opened) worker.unref();
  };

  const lose = (reason: string, cause?: Error) => {
    if (gone) return;
    gone = true;
    clearTimeout(openTimer);
    void worker.terminate();
    const error = new GatewayError("store_unavailable", "the embedded database's worker stopped; retry shortly", { retryAfterMs: 1_000, cause: cause ?? new Error(reason) });
    for (const call of pending.values()) {
      clearTimeout(call.timer);
      call.reject(error);
    }
    pending.clear();
    opened?.reject(error);
    opened = undefined;
    if (!closing) onLost(reason);
  };

  const call = (request: ThreadRequest): Promise<unknown> => {
    if (gone) return Promise.reject(new GatewayError("store_unavailable", "the embedded database's worker stopped; retry shortly", { retryAfterMs: 1_000 }));
    const id = nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => lose(`a call took longer than ${deadlineMs} ms`), deadlineMs);
      pending.set(id, { resolve, reject, timer });
      worker.ref();
      try {
        worker.postMessage({ ...request, id });
      } catch (error) {
        // Parameters that cannot be cloned (a function, a class with private state): this call's fault only.
        clearTimeout(timer);
        pending.delete(id);
        idle();
        reject(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      if (crashArmed) {
        crashArmed = false;
        // As in a crash, no answer comes back, even one the worker sent before it stopped.
        dying = true;
        void worker.terminate();
      }
    });
  };

  const thread: PgliteThread = {
    call,
    async close() {
      closing = true;
      await call({ op: "close" }).catch(() => undefined);
      lose("closed");
    },
  };

  worker.on("message", (reply: WorkerReply) => {
    if (dying) return;
    switch (reply.type) {
      case "opened":
        clearTimeout(openTimer);
        opened?.resolve(thread);
        opened = undefined;
        idle();
        return;
      case "open_failed":
        lose("it could not open the database", receivedError(reply.error));
        return;
      default: {
        const waiting = pending.get(reply.id);
        if (!waiting) return;
        pending.delete(reply.id);
        clearTimeout(waiting.timer);
        idle();
        if (reply.type === "done") waiting.resolve(reply.value);
        else waiting.reject(receivedError(reply.error));
      }
    }
  });
  worker.on("error", (error) => lose(`it failed: ${error.message}`, error));
  worker.on("exit", (code) => lose(`it exited with code ${code}`));
  return opening;
}
