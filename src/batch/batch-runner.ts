import type { Meter } from "@opentelemetry/api";
import type { Logger } from "../logging/logger.js";
import type { BatchStore, LineResult, PendingLine, StoredBatch } from "./batch-store.js";
import { createLineWriter } from "./line-writer.js";

/** What became of one line: its result, and whether the batch must stop (the key's budget is spent). */
export interface LineOutcome {
  readonly result: LineResult;
  readonly stop?: boolean;
}

/** How a line is run and written: the edge's part (the wire of the request and of the output line). */
export interface LineExecutor {
  /** Runs one line as the batch's owner; resolves with its result (a refused or failed request is a result too). */
  run(batch: StoredBatch, line: PendingLine, signal: AbortSignal): Promise<LineOutcome>;
  /** The result of a line never run because the batch stopped (its key's budget). */
  notRun(batch: StoredBatch, line: PendingLine): LineResult;
}

/**
 * The in-process queue: batches in the order they came, their lines in
 * file order, at most `concurrency` lines at once over all of them.
 * Each line's result is written once (BatchStore.finishLine); what has
 * one is never run again, so a restart picks up where the last process
 * stopped (`resume`).
 */
export interface BatchRunner {
  /** Starts running a batch (new, or left unfinished by a previous process). */
  add(id: string): void;
  /** Takes no new lines of the batch; once its running lines end, it is finished as `cancelled`. */
  cancel(id: string): void;
  /** Resolves once the batch is finished here (or at once when it is not running here). */
  settled(id: string): Promise<void>;
  /** Adds every batch the database holds unfinished; resolves with how many. */
  resume(): Promise<number>;
  /**
   * Stops taking lines, lets the running ones finish for up to `graceMs`
   * (their results are written), then aborts the rest: those results are
   * not written, and those lines run again at the next start.
   */
  close(graceMs?: number): Promise<void>;
}

export interface BatchRunnerOptions {
  readonly store: BatchStore;
  readonly executor: LineExecutor;
  readonly concurrency: number;
  readonly logger: Logger;
  /** Lines finished, by status (completed, failed, not_run), for `sluice_batch_lines_total`. */
  readonly meter?: Meter;
}

/** Lines read from the database per batch at a time. */
const PAGE = 100;

interface Active {
  readonly id: string;
  batch?: StoredBatch;
  /** The last line read from the database. */
  cursor: number;
  readonly buffer: PendingLine[];
  exhausted: boolean;
  refill?: Promise<void>;
  inflight: number;
  cancelling: boolean;
  /** A line was refused for the key's budget: no more lines run, the rest are failed. */
  stopped: boolean;
  finishing: boolean;
  readonly done: Deferred;
}

interface Deferred {
  readonly promise: Promise<void>;
  readonly resolve: () => void;
}

function deferred(): Deferred {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const describe = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message.slice(0, 200)}` : "unknown");

export function createBatchRunner(options: BatchRunnerOptions): BatchRunner {
  const { store, executor, logger } = options;
  const lines = options.meter?.createCounter("sluice.batch.lines", { unit: "{line}", description: "Batch lines finished, by status: completed, failed (its result is an error), or not_run (the batch stopped for its key's budget)." });
  const writeLine = createLineWriter({ store, logger, ...(options.meter ? { meter: options.meter } : {}) });
  const active = new Map<string, Active>();
  const running = new Set<Promise<void>>();
  const controllers = new Set<AbortController>();
  let workers = 0;
  let closed = false;

  /** Drops a batch this process cannot go on with (its database failed): it stays unfinished and resumes at the next start. */
  const drop = (a: Active, error: unknown) => {
    logger.warn({ event: "batch.interrupted", batch: a.id, error: describe(error) });
    active.delete(a.id);
    a.done.resolve();
  };

  const finishIfDone = (a: Active) => {
    if (a.finishing || a.inflight > 0 || closed || a.refill) return;
    const drained = a.exhausted && a.buffer.length === 0;
    if (!drained && !a.cancelling && !a.stopped) return;
    a.finishing = true;
    void (async () => {
      if (a.stopped && !a.cancelling && a.batch) {
        const batch = a.batch;
        const failed = await store.failRest(a.id, (line) => executor.notRun(batch, line));
        if (failed > 0) lines?.add(failed, { "sluice.batch.status": "not_run" });
        logger.info({ event: "batch.stopped", batch: a.id, reason: "budget_exceeded", notRun: failed });
      }
      const finished = await store.finish(a.id);
      logger.info({ event: "batch.finished", batch: a.id, status: finished?.status, counts: finished?.counts });
      active.delete(a.id);
      a.done.resolve();
    })().catch((error: unknown) => drop(a, error));
  };

  const refill = (a: Active): Promise<void> =>
    (a.refill ??= (async () => {
      if (!a.batch) {
        const batch = await store.batch(a.id);
        if (!batch) throw new Error("batch not found");
        a.batch = batch;
        if (batch.status === "cancelling") a.cancelling = true;
      }
      const lines = await store.pending(a.id, a.cursor, PAGE);
      if (lines.length > 0) a.cursor = lines[lines.length - 1]!.line;
      if (lines.length < PAGE) a.exhausted = true;
      a.buffer.push(...lines);
    })()
      .catch((error: unknown) => drop(a, error))
      .finally(() => {
        a.refill = undefined;
        finishIfDone(a);
      }));

  /** The next line to run, oldest batch first; undefined when none is ready. */
  const next = async (): Promise<[Active, PendingLine] | undefined> => {
    for (;;) {
      if (closed) return undefined;
      let waited = false;
      for (const a of active.values()) {
        if (a.cancelling || a.stopped || a.finishing) continue;
        const line = a.buffer.shift();
        if (line) {
          a.inflight++;
          return [a, line];
        }
        if (!a.exhausted) {
          await refill(a);
          waited = true;
          break;
        }
      }
      if (!waited) return undefined;
    }
  };

  const runLine = async (a: Active, line: PendingLine): Promise<void> => {
    const controller = new AbortController();
    controllers.add(controller);
    try {
      const outcome = await executor.run(a.batch!, line, controller.signal);
      // Aborted by close(), or refused by a gate or the registry closing: not this line's answer; it runs again at the next start.
      if (controller.signal.aborted || (closed && !outcome.result.ok)) return;
      const { written, deadLettered } = await writeLine(a.id, line, outcome.result);
      if (written) lines?.add(1, { "sluice.batch.status": outcome.result.ok && !deadLettered ? "completed" : "failed" });
      if (!written) logger.warn({ event: "batch.line_duplicate", batch: a.id, customId: line.customId });
      if (outcome.stop) a.stopped = true;
    } catch (error) {
      if (!controller.signal.aborted) drop(a, error);
    } finally {
      controllers.delete(controller);
      a.inflight--;
      finishIfDone(a);
    }
  };

  const work = async (): Promise<void> => {
    for (let job = await next(); job; job = await next()) {
      const run = runLine(...job);
      running.add(run);
      await run;
      running.delete(run);
    }
  };

  const wake = () => {
    while (workers < options.concurrency && !closed) {
      workers++;
      void work().finally(() => workers--);
    }
  };

  const runner: BatchRunner = {
    add(id) {
      if (closed || active.has(id)) return;
      active.set(id, { id, cursor: 0, buffer: [], exhausted: false, inflight: 0, cancelling: false, stopped: false, finishing: false, done: deferred() });
      wake();
    },
    cancel(id) {
      runner.add(id);
      const a = active.get(id);
      if (!a) return;
      a.cancelling = true;
      a.buffer.length = 0;
      finishIfDone(a);
    },
    settled: (id) => active.get(id)?.done.promise ?? Promise.resolve(),
    async resume() {
      const ids = await store.resumable();
      for (const id of ids) runner.add(id);
      if (ids.length > 0) logger.info({ event: "batch.resumed", batches: ids.length });
      return ids.length;
    },
    async close(graceMs = 0) {
      closed = true;
      const settled = Promise.allSettled([...running]);
      if (graceMs > 0 && running.size > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([settled, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
        clearTimeout(timer);
      }
      for (const controller of controllers) controller.abort();
      await settled;
      for (const a of active.values()) a.done.resolve();
      active.clear();
    },
  };
  return runner;
}
