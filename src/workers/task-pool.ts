import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { GatewayError } from "../core/errors.js";
import type { TaskReply, TaskRequest } from "./task-messages.js";
import { workerEntry } from "./worker-entry.js";

/**
 * A function that runs in a pool worker: the export `name` of the module
 * `file` beside `from` (an `import.meta.url`), found by workerEntry when
 * the task first runs (so importing a room that defines a task never
 * needs the build). Its payload and result cross by structured clone.
 */
export interface Task<P, R> {
  readonly from: string;
  readonly file: string;
  readonly name: string;
  /** Types only: what the payload and the result are. */
  readonly _types?: (payload: P) => R;
}

/** Names a task: `defineTask<string[], number[]>(import.meta.url, "./count-task.js", "countTexts")`. */
export function defineTask<P, R>(from: string, file: string, name: string): Task<P, R> {
  return { from, file, name };
}

const modules = new WeakMap<Task<unknown, unknown>, string>();
function moduleOf(task: Task<unknown, unknown>): string {
  let href = modules.get(task);
  if (href === undefined) {
    href = workerEntry(task.from, task.file).href;
    modules.set(task, href);
  }
  return href;
}

/** Why a task did not run to its answer, as GatewayError `reason`: callers (and metrics) branch on it. */
export type PoolFailure = "queue_full" | "timeout" | "worker_failed" | "closed";

export interface TaskPoolOptions {
  /** Workers at most (started on demand). */
  readonly size: number;
  /** Tasks that may wait for a worker; one more is refused at once. */
  readonly maxQueued: number;
  /** A task's whole deadline, waiting included; a worker past it is taken as hung and replaced. */
  readonly timeoutMs: number;
}

export interface RunOptions {
  /** The caller's: aborted, a waiting task is dropped and the caller stops waiting. */
  readonly signal?: AbortSignal;
  /** This task's deadline instead of the pool's. */
  readonly timeoutMs?: number;
}

export interface PoolStats {
  readonly workers: number;
  readonly busy: number;
  readonly queued: number;
  readonly completed: number;
  /** Tasks that did not get their answer, by why. */
  readonly failed: Readonly<Record<PoolFailure, number>>;
  /** Workers started to replace one that crashed or hung. */
  readonly replaced: number;
}

export interface TaskPool {
  /**
   * Runs `task` in a worker. Rejects with a GatewayError whose `reason` is
   * a PoolFailure (`overloaded` when the queue is full or the deadline
   * passed while waiting; `internal` when the worker crashed, hung or the
   * task threw; `shutting_down` after close), or with the signal's reason
   * when the caller left (a running task then finishes unseen).
   */
  run<P, R>(task: Task<P, R>, payload: P, options?: RunOptions): Promise<R>;
  stats(): PoolStats;
  /** Refuses what waits, stops every worker; tasks running are rejected. */
  close(): Promise<void>;
}

/** One worker for each core but the one the relay runs on, never none. */
export function defaultPoolSize(): number {
  return Math.max(1, availableParallelism() - 1);
}

interface Job {
  readonly request: TaskRequest;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
  timer: NodeJS.Timeout | undefined;
  slot?: Slot;
  settled: boolean;
}

interface Slot {
  readonly worker: Worker;
  job: Job | undefined;
  /** Stopped on purpose (hung, or the pool closing): its exit is not a crash. */
  retired: boolean;
}

const failure = (reason: PoolFailure, code: "overloaded" | "internal" | "shutting_down", message: string, cause?: unknown) => new GatewayError(code, message, { reason, ...(cause === undefined ? {} : { cause }) });

/**
 * A small fixed pool of worker threads for CPU-heavy per-request work
 * (token counting, PII screening of large prompts), so the relay's thread
 * keeps turning for every other stream.
 *
 * Why `worker_threads` directly and not piscina 5.3.2: measured on the
 * 2-core bench machine (`node dist/bench/pool-mechanism.js /tmp/pisc`,
 * one worker each, the same task module, 2,000 round trips each,
 * interleaved, four runs), a tiny task's round trip was 0.020–0.025 ms
 * p50 here against piscina's 0.023–0.028 ms, and a 64 KiB text task
 * 0.026–0.036 ms against 0.032–0.038 ms; p99 swung 0.1–7 ms for both
 * with the machine's load (no winner). No speed to gain, then, and what
 * piscina adds (its own queue and balancing, a task-per-file model) is
 * what this file needs in another shape: a deadline that replaces the
 * hung worker rather than leaving it busy, failures as GatewayError
 * reasons callers branch on, and one worker script that runs tasks named
 * by module, so each room keeps its task beside its code. That is ~250
 * lines and no dependency to keep on Node 20's line.
 *
 * Each worker runs one task at a time (the work is CPU-bound: two on one
 * thread would only queue inside it). Workers start on first need, are
 * unref'd (an idle pool never keeps a process alive) and one that exits
 * or passes a deadline is replaced on the next task.
 */
export function createTaskPool(options: TaskPoolOptions): TaskPool {
  // Found when the first task comes: a gateway run from sources without the build still starts, and its tasks fall back.
  let entry: URL | undefined;
  const slots: Slot[] = [];
  const queue: Job[] = [];
  const failed: Record<PoolFailure, number> = { queue_full: 0, timeout: 0, worker_failed: 0, closed: 0 };
  let completed = 0;
  let replaced = 0;
  let lost = 0;
  let nextId = 1;
  let closed = false;

  const settle = (job: Job, outcome: { value: unknown } | { error: unknown }) => {
    if (job.settled) return;
    job.settled = true;
    job.signal?.removeEventListener("abort", job.onAbort);
    if ("value" in outcome) job.resolve(outcome.value);
    else job.reject(outcome.error);
  };
  const fail = (job: Job, error: GatewayError) => {
    if (!job.settled) failed[error.reason as PoolFailure]++;
    settle(job, { error });
  };

  const retire = (slot: Slot) => {
    slot.retired = true;
    slots.splice(slots.indexOf(slot), 1);
    void slot.worker.terminate();
  };

  const start = (): Slot => {
    const worker = new Worker(entry!);
    worker.unref();
    const slot: Slot = { worker, job: undefined, retired: false };
    if (lost > 0) {
      lost--;
      replaced++;
    }
    worker.on("message", (reply: TaskReply) => {
      const job = slot.job;
      if (!job || job.request.id !== reply.id) return;
      clearTimeout(job.timer);
      slot.job = undefined;
      if (reply.ok) {
        completed++;
        settle(job, { value: reply.value });
      } else fail(job, failure("worker_failed", "internal", `a worker task (${job.request.name}) failed`, new Error(reply.message)));
      dispatch();
    });
    // An uncaught error is followed by the exit: the slot leaves at the first, so no task is handed to a dying worker.
    const lose = (why: string, cause?: unknown) => {
      if (slot.retired) return;
      slot.retired = true;
      slots.splice(slots.indexOf(slot), 1);
      lost++;
      const job = slot.job;
      slot.job = undefined;
      clearTimeout(job?.timer);
      if (job) fail(job, failure("worker_failed", "internal", `the worker running ${job.request.name} ${why}; it is replaced`, cause));
      dispatch();
    };
    worker.on("error", (error) => lose("crashed", error));
    worker.on("exit", (code) => lose(`stopped (exit code ${code})`));
    slots.push(slot);
    return slot;
  };

  const dispatch = () => {
    while (!closed && queue.length > 0) {
      const slot = slots.find((s) => s.job === undefined) ?? (slots.length < options.size ? start() : undefined);
      if (!slot) return;
      const job = queue.shift()!;
      try {
        slot.worker.postMessage(job.request);
      } catch (error) {
        // A payload structured clone cannot copy: the worker stays free.
        clearTimeout(job.timer);
        fail(job, failure("worker_failed", "internal", `a worker task (${job.request.name}) could not be sent`, error));
        continue;
      }
      job.slot = slot;
      slot.job = job;
    }
  };

  const onTimeout = (job: Job, timeoutMs: number) => {
    const at = queue.indexOf(job);
    if (at >= 0) {
      queue.splice(at, 1);
      fail(job, failure("timeout", "overloaded", `a worker task (${job.request.name}) waited past its ${timeoutMs} ms deadline for a free worker`));
      return;
    }
    const slot = job.slot;
    fail(job, failure("timeout", "internal", `a worker task (${job.request.name}) ran past its ${timeoutMs} ms deadline; its worker is replaced`));
    if (slot && slot.job === job && !slot.retired) {
      retire(slot);
      lost++;
      dispatch();
    }
  };

  return {
    run<P, R>(task: Task<P, R>, payload: P, runOptions: RunOptions = {}): Promise<R> {
      const { signal } = runOptions;
      const timeoutMs = runOptions.timeoutMs ?? options.timeoutMs;
      if (closed) return Promise.reject(failure("closed", "shutting_down", "the worker pool is closed"));
      signal?.throwIfAborted();
      let module: string;
      try {
        module = moduleOf(task as Task<unknown, unknown>);
        entry ??= workerEntry(import.meta.url, "./task-worker.js");
      } catch (error) {
        failed.worker_failed++;
        return Promise.reject(failure("worker_failed", "internal", `the worker task ${task.name} has no script to run`, error));
      }
      const idle = slots.some((s) => s.job === undefined) || slots.length < options.size;
      if (!idle && queue.length >= options.maxQueued) {
        failed.queue_full++;
        return Promise.reject(failure("queue_full", "overloaded", `the worker pool is busy: ${options.maxQueued} tasks wait already`));
      }
      return new Promise<R>((resolve, reject) => {
        const job: Job = {
          request: { id: nextId++, module, name: task.name, payload },
          resolve: resolve as (value: unknown) => void,
          reject,
          signal,
          onAbort: () => {
            // Still waiting: it never runs. Already running: it finishes unseen, its deadline still guarding the worker.
            const at = queue.indexOf(job);
            if (at >= 0) {
              queue.splice(at, 1);
              clearTimeout(job.timer);
            }
            settle(job, { error: signal?.reason });
          },
          timer: undefined,
          settled: false,
        };
        job.timer = setTimeout(() => onTimeout(job, timeoutMs), timeoutMs);
        signal?.addEventListener("abort", job.onAbort, { once: true });
        queue.push(job);
        dispatch();
      });
    },
    stats: () => ({ workers: slots.length, busy: slots.filter((s) => s.job !== undefined).length, queued: queue.length, completed, failed: { ...failed }, replaced }),
    async close() {
      if (closed) return;
      closed = true;
      const error = () => failure("closed", "shutting_down", "the worker pool closed before the task ran");
      for (const job of queue.splice(0)) {
        clearTimeout(job.timer);
        fail(job, error());
      }
      const stopping = slots.splice(0).map((slot) => {
        slot.retired = true;
        clearTimeout(slot.job?.timer);
        if (slot.job) fail(slot.job, error());
        return slot.worker.terminate();
      });
      await Promise.all(stopping);
    },
  };
}
