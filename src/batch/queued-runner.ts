import { setTimeout as delay } from "node:timers/promises";
import type { Meter } from "@opentelemetry/api";
import { type Job, Queue, Worker } from "bullmq";
import { backoffDelay } from "../core/backoff.js";
import type { Logger } from "../logging/logger.js";
import type { BatchRunner, LineExecutor } from "./batch-runner.js";
import { type BatchStore, type StoredBatch, UNFINISHED } from "./batch-store.js";
import { createLineWriter } from "./line-writer.js";

/** A Redis client BullMQ accepts (store/redis-connection.ts: ioredis, connecting and reconnecting on its own); the runner ends it. */
export interface QueueClient {
  quit(): Promise<unknown>;
  /** Drops the connection at once (a close that could not quit in time: Redis is away). */
  disconnect(): void;
  on(event: "error", listener: (error: Error) => void): unknown;
}

export interface QueuedRunnerOptions {
  readonly store: BatchStore;
  readonly executor: LineExecutor;
  /** Lines this gateway runs at once, over all batches. */
  readonly concurrency: number;
  /** A new, unconnected client; called twice (the queue's and the worker's connection). */
  readonly client: () => QueueClient;
  /** BullMQ's key prefix: the store's Redis prefix, so deployments sharing a Redis keep apart. */
  readonly prefix: string;
  /**
   * How long a line stays claimed by a replica that stopped answering: its
   * lock is renewed at half this while it runs, and a line whose lock ran
   * out (the replica died) goes back to the queue for another.
   */
  readonly leaseMs: number;
  readonly logger: Logger;
  readonly meter?: Meter;
  /** Lines enqueued per Redis call when a batch is added or resumed. */
  readonly enqueueChunk?: number;
  /**
   * How often the queue is checked for lost work: when it holds no job at
   * all while the database has unfinished batches (Redis restarted without
   * persistence, or every replica died between storing a batch and
   * queueing it), those batches are queued again. Default: twice the lease.
   */
  readonly sweepMs?: number;
}

/** The queue's name under the prefix. */
export const LINE_QUEUE = "batch-lines";

/** What a job carries: ids only, so no request text is ever in Redis. */
interface LineJob {
  readonly batch: string;
  readonly line: number;
}

/** Tries a job this many times when the gateway running it fails (its database away, a shutdown cutting it off), a second apart. */
const ATTEMPTS = 30;
/** A close waits this long for BullMQ and Redis beyond the grace: past it the connections are dropped, so a shutdown never hangs on a Redis that is away. */
const CLOSE_TIMEOUT_MS = 5_000;
/** Attempts at writing a line's result after its call returned: the call is paid for, so the write is retried here rather than the job. */
const WRITE_ATTEMPTS = 6;
/** A line whose lease ran out this many times (replicas dying under it) fails for good; a resume queues it again. */
const MAX_STALLED = 5;
/** Pages of lines read when enqueueing a batch. */
const PAGE = 500;

/** Whether `work` settled within `ms` (it keeps running either way). */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]);
  clearTimeout(timer);
  return settled;
}

const describe = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message.slice(0, 200)}` : "unknown");

/** The job id of a line: one job per line while it waits or runs, whichever replica adds it. */
export const lineJobId = (batch: string, line: number): string => `${batch}-${line}`;

/** Thrown out of a job cut off by close(): the job fails, and BullMQ gives it to a replica still running. */
class ClosingError extends Error {
  override readonly name = "ClosingError";
}

/**
 * The batch queue shared by replicas: one BullMQ job per line over the
 * store's Redis, every replica a worker, the lines themselves and their
 * results in the shared database. BullMQ gives a line to one worker at a
 * time under a lease; a replica that dies mid-line loses the lease and
 * the line goes to another. The database, not the queue, decides what is
 * done: a line's result is written once (BatchStore.finishLine), a job
 * for a line that has one does nothing, so a job run twice never answers
 * or charges twice. Whichever replica settles a batch's last line writes
 * its files.
 */
export function createQueuedBatchRunner(options: QueuedRunnerOptions): BatchRunner {
  const { store, executor, logger } = options;
  const lines = options.meter?.createCounter("sluice.batch.lines", { unit: "{line}", description: "Batch lines finished, by status: completed, failed (its result is an error), or not_run (the batch stopped for its key's budget)." });
  const connection = { queue: options.client(), worker: options.client() };
  for (const client of [connection.queue, connection.worker]) client.on("error", (error) => logger.debug({ event: "batch.queue_error", error: describe(error) }));
  const writeLine = createLineWriter({ store, logger, ...(options.meter ? { meter: options.meter } : {}) });
  const controllers = new Set<AbortController>();
  const waiting = new Map<string, { readonly promise: Promise<void>; readonly resolve: () => void }>();
  /** Batches being queued, by id: one task each, however often they are added or swept. */
  const enqueueing = new Map<string, Promise<void>>();
  /** Aborted by close(): ends backoff sleeps at once. */
  const closing = new AbortController();
  let closed = false;

  const sleep = (ms: number) => delay(ms, undefined, { signal: closing.signal }).catch(() => undefined);

  /** Writes a line's outcome, trying again while the database is away; its call was paid for, so the job must not run it again. */
  const persist = async <T>(write: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (error) {
        if (attempt >= WRITE_ATTEMPTS || closed) throw error;
        await sleep(backoffDelay(attempt, { baseMs: 250 }));
      }
    }
  };

  const settledHere = (id: string) => {
    waiting.get(id)?.resolve();
    waiting.delete(id);
  };

  const finishIfSettled = async (id: string) => {
    const finished = await store.finishIfSettled(id);
    if (!finished) return;
    logger.info({ event: "batch.finished", batch: id, status: finished.status, counts: finished.counts, skipped: finished.skipped });
    settledHere(id);
  };

  const runLine = async (batch: StoredBatch, line: { customId: string; line: number; body: string }): Promise<void> => {
    const controller = new AbortController();
    controllers.add(controller);
    if (closed) controller.abort();
    try {
      const outcome = await executor.run(batch, line, controller.signal);
      // While the gateway closes, a failure is the close's (a gate or the registry refusing, the call cut off), not the
      // line's: it goes back to the queue for a replica still running instead of into the error file.
      if (controller.signal.aborted || (closed && !outcome.result.ok)) throw new ClosingError("the gateway closed while the line ran");
      const { written, deadLettered } = await persist(() => writeLine(batch.id, line, outcome.result));
      if (written) lines?.add(1, { "sluice.batch.status": outcome.result.ok && !deadLettered ? "completed" : "failed" });
      else logger.warn({ event: "batch.line_duplicate", batch: batch.id, customId: line.customId });
      if (outcome.stop) {
        await persist(() => store.stop(batch.id));
        logger.info({ event: "batch.stopped", batch: batch.id, reason: "budget_exceeded" });
      }
    } finally {
      controllers.delete(controller);
    }
  };

  const processJob = async (job: Job<LineJob>): Promise<void> => {
    if (closed) throw new ClosingError("the gateway is closing");
    const { batch: id, line: number } = job.data;
    const batch = await store.batch(id);
    if (!batch || !UNFINISHED.includes(batch.status)) return;
    const line = await store.line(id, number);
    if (!line || line.done) return;
    if (batch.status === "cancelling") {
      await store.skipLine(id, line.customId);
    } else if (batch.stopped) {
      if (await store.finishLine(id, line.customId, executor.notRun(batch, line))) lines?.add(1, { "sluice.batch.status": "not_run" });
    } else if (await store.markRunning(id, line.customId)) {
      await runLine(batch, line);
    }
    await finishIfSettled(id);
  };

  const prefix = options.prefix.replace(/:+$/, "");
  const queue = new Queue<LineJob>(LINE_QUEUE, { connection: connection.queue as never, prefix });
  queue.on("error", (error) => logger.debug({ event: "batch.queue_error", error: describe(error) }));
  const worker = new Worker<LineJob>(LINE_QUEUE, processJob, {
    connection: connection.worker as never,
    prefix,
    concurrency: options.concurrency,
    lockDuration: options.leaseMs,
    stalledInterval: options.leaseMs,
    maxStalledCount: MAX_STALLED,
    autorun: false,
  });
  worker.on("error", (error) => logger.debug({ event: "batch.queue_error", error: describe(error) }));
  worker.on("failed", (job, error) => {
    if (job && !(error instanceof ClosingError)) logger.warn({ event: "batch.line_retry", batch: job.data.batch, line: job.data.line, attempt: job.attemptsMade, error: describe(error) });
  });
  // BullMQ waits for Redis itself (at start, and after losing it): the worker runs from the start.
  void worker.run().catch((error: unknown) => logger.warn({ event: "batch.worker_failed", error: describe(error) }));

  /** Queues every line of the batch without a result; a line already queued keeps its one job (its id). */
  const enqueue = async (id: string): Promise<number> => {
    let count = 0;
    for (let after = 0; ; ) {
      const page = await store.pending(id, after, options.enqueueChunk ?? PAGE);
      if (page.length === 0) break;
      after = page[page.length - 1]!.line;
      await queue.addBulk(
        page.map((l) => ({
          name: "line",
          data: { batch: id, line: l.line },
          opts: { jobId: lineJobId(id, l.line), attempts: ATTEMPTS, backoff: { type: "fixed", delay: 1_000 }, removeOnComplete: true, removeOnFail: true },
        })),
      );
      count += page.length;
    }
    return count;
  };

  /** Queues the batch, trying again with backoff while Redis or the database is away, until it is queued or the gateway closes. */
  const add = (id: string) => {
    if (closed || enqueueing.has(id)) return;
    const task = (async () => {
      for (let attempt = 0; !closed; attempt++) {
        try {
          const count = await enqueue(id);
          logger.debug({ event: "batch.queued", batch: id, lines: count });
          // Every line may already be settled (a resume after the last line, before the files).
          if (count === 0) await finishIfSettled(id);
          return;
        } catch (error) {
          logger.warn({ event: "batch.queue_failed", batch: id, attempt, error: describe(error) });
          await sleep(backoffDelay(attempt, { baseMs: 250, maxMs: 30_000 }));
        }
      }
    })();
    enqueueing.set(id, task);
    void task.finally(() => enqueueing.delete(id));
  };

  /** Queues again the unfinished batches of a queue that lost its jobs; a no-op while any job waits or runs. */
  const sweep = async () => {
    const counts = await queue.getJobCounts("waiting", "active", "delayed", "prioritized");
    if (Object.values(counts).some((n) => n > 0)) return;
    const ids = await store.resumable();
    if (ids.length === 0) return;
    logger.warn({ event: "batch.requeued", batches: ids.length, reason: "the queue held no job for unfinished batches" });
    for (const id of ids) add(id);
  };
  let sweeping = false;
  const sweeper = setInterval(
    () => {
      if (sweeping || closed) return;
      sweeping = true;
      void sweep()
        .catch((error: unknown) => logger.debug({ event: "batch.sweep_failed", error: describe(error) }))
        .finally(() => (sweeping = false));
    },
    options.sweepMs ?? options.leaseMs * 2,
  );
  sweeper.unref();

  return {
    add,
    cancel(id) {
      // Every line not started is skipped now, in one statement, not when its job reaches the front of the queue;
      // the running ones finish, and whichever settles last ends the batch.
      void (async () => {
        const skipped = await store.skipRest(id);
        if (skipped > 0) logger.info({ event: "batch.cancelling", batch: id, skipped });
        await finishIfSettled(id);
      })().catch((error: unknown) => logger.warn({ event: "batch.interrupted", batch: id, error: describe(error) }));
    },
    settled(id) {
      let entry = waiting.get(id);
      if (!entry) {
        let resolve: () => void = () => undefined;
        const promise = new Promise<void>((r) => (resolve = r));
        entry = { promise, resolve };
        waiting.set(id, entry);
        void store
          .batch(id)
          .then((batch) => {
            if (!batch || !UNFINISHED.includes(batch.status)) settledHere(id);
          })
          .catch(() => settledHere(id));
      }
      return entry.promise;
    },
    async resume() {
      const ids = await store.resumable();
      for (const id of ids) add(id);
      if (ids.length > 0) logger.info({ event: "batch.resumed", batches: ids.length });
      return ids.length;
    },
    async close(graceMs = 0) {
      if (closed) return;
      closed = true;
      closing.abort();
      clearInterval(sweeper);
      const stopping = worker.close();
      if (graceMs > 0) await within(stopping, graceMs);
      for (const controller of controllers) controller.abort();
      // Handing the cut-off lines back needs Redis: bounded, so a Redis that is away never holds up the shutdown.
      await within(Promise.allSettled([stopping, ...enqueueing.values(), queue.close()]), CLOSE_TIMEOUT_MS);
      const quit = await within(Promise.allSettled([connection.queue.quit(), connection.worker.quit()]), CLOSE_TIMEOUT_MS);
      if (!quit) {
        connection.queue.disconnect();
        connection.worker.disconnect();
      }
      for (const entry of waiting.values()) entry.resolve();
      waiting.clear();
    },
  };
}
