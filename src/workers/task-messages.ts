/** What the pool posts to a worker: which export of which module to call, with what. */
export interface TaskRequest {
  readonly id: number;
  /** A file URL the worker can import (plain JavaScript: see worker-entry.ts). */
  readonly module: string;
  readonly name: string;
  readonly payload: unknown;
}

/** A worker's answer to one request; a task that threw answers with its message only. */
export type TaskReply = { readonly id: number; readonly ok: true; readonly value: unknown } | { readonly id: number; readonly ok: false; readonly message: string };
