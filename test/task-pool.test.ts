import { afterEach, describe, expect, it } from "vitest";
import { GatewayError } from "../src/core/errors.js";
import { inPoolOr, installTaskPool, poolFallbacks } from "../src/workers/shared-pool.js";
import { createTaskPool, defineTask, type TaskPool } from "../src/workers/task-pool.js";

/**
 * The worker pool (issue #47): tasks run in real worker threads; a full
 * queue refuses at once; a crashed or hung worker is replaced and its
 * caller told why; a caller that leaves stops waiting; close refuses the
 * rest. Busy and hung workers are held by Atomics on shared memory, never
 * by time, so nothing here depends on the machine's speed (the deadline
 * test only needs the deadline to pass at all).
 */
const FIXTURE = new URL("./fixtures/pool-tasks.mjs", import.meta.url).href;
const double = defineTask<number, number>(FIXTURE, "./pool-tasks.mjs", "double");
const hold = defineTask<Int32Array, string>(FIXTURE, "./pool-tasks.mjs", "hold");
const fail = defineTask<null, never>(FIXTURE, "./pool-tasks.mjs", "fail");
const exit = defineTask<null, never>(FIXTURE, "./pool-tasks.mjs", "exit");
const crash = defineTask<null, never>(FIXTURE, "./pool-tasks.mjs", "crash");

const gate = () => new Int32Array(new SharedArrayBuffer(4));
const open = (g: Int32Array) => {
  Atomics.store(g, 0, 1);
  Atomics.notify(g, 0);
};
const reasonOf = (p: Promise<unknown>) =>
  p.then(
    () => "resolved",
    (error: unknown) => (error instanceof GatewayError ? `${error.code}/${error.reason}` : String(error)),
  );

let pool: TaskPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe("the worker pool", () => {
  it("runs tasks in its workers, as many at once as it has workers", async () => {
    pool = createTaskPool({ size: 2, maxQueued: 8, timeoutMs: 60_000 });
    const g = gate();
    const held = pool.run(hold, g);
    // One worker is held: the other still answers.
    expect(await Promise.all([1, 2, 3].map((n) => pool!.run(double, n)))).toEqual([2, 4, 6]);
    expect(pool.stats()).toMatchObject({ workers: 2, busy: 1 });
    open(g);
    expect(await held).toBe("released");
  });

  it("refuses a task past its queue bound at once, with a code callers branch on", async () => {
    pool = createTaskPool({ size: 1, maxQueued: 1, timeoutMs: 60_000 });
    const g = gate();
    const running = pool.run(hold, g);
    const waiting = pool.run(double, 21);
    const refused = await pool.run(double, 1).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(GatewayError);
    expect(refused).toMatchObject({ code: "overloaded", reason: "queue_full" });
    expect((refused as Error).message).toContain("1 tasks wait already");
    open(g);
    expect(await running).toBe("released");
    expect(await waiting).toBe(42);
    expect(pool.stats().failed.queue_full).toBe(1);
  });

  it("a worker that dies is replaced, and its caller gets a clear error", async () => {
    pool = createTaskPool({ size: 1, maxQueued: 4, timeoutMs: 60_000 });
    const died = await pool.run(exit, null).catch((error: unknown) => error);
    expect(died).toMatchObject({ code: "internal", reason: "worker_failed" });
    expect((died as Error).message).toContain("stopped (exit code 3)");
    expect(await pool.run(double, 5)).toBe(10);
    expect(pool.stats().replaced).toBe(1);
    // A task that throws keeps its worker: only its caller hears of it.
    expect(await reasonOf(pool.run(fail, null))).toBe("internal/worker_failed");
    expect(await pool.run(double, 6)).toBe(12);
    // A payload that cannot cross is refused, and the worker stays.
    expect(await reasonOf(pool.run(double, (() => 1) as unknown as number))).toBe("internal/worker_failed");
    expect(pool.stats().replaced).toBe(1);
    // An uncaught error kills the worker: its caller is told, the next task gets a new one.
    const crashed = await pool.run(crash, null).catch((error: unknown) => error);
    expect(crashed).toMatchObject({ code: "internal", reason: "worker_failed" });
    expect((crashed as Error).message).toContain("crashed; it is replaced");
    expect(await pool.run(double, 8)).toBe(16);
    expect(pool.stats().replaced).toBe(2);
  });

  it("a worker past a task's deadline is taken as hung and replaced; the next task runs", async () => {
    pool = createTaskPool({ size: 1, maxQueued: 4, timeoutMs: 60_000 });
    const hung = await pool.run(hold, gate(), { timeoutMs: 50 }).catch((error: unknown) => error);
    expect(hung).toMatchObject({ code: "internal", reason: "timeout" });
    expect((hung as Error).message).toContain("its worker is replaced");
    expect(await pool.run(double, 7)).toBe(14);
    expect(pool.stats().replaced).toBe(1);
  });

  it("a caller that leaves stops waiting; a waiting task it left never runs", async () => {
    pool = createTaskPool({ size: 1, maxQueued: 4, timeoutMs: 60_000 });
    const g = gate();
    const running = pool.run(hold, g);
    const left = new AbortController();
    const waiting = pool.run(double, 1, { signal: left.signal });
    left.abort(new Error("client gone"));
    await expect(waiting).rejects.toThrow("client gone");
    expect(pool.stats().queued).toBe(0);
    open(g);
    expect(await running).toBe("released");
  });

  it("close refuses what waits and what runs, and every later task", async () => {
    pool = createTaskPool({ size: 1, maxQueued: 4, timeoutMs: 60_000 });
    const running = reasonOf(pool.run(hold, gate()));
    const waiting = reasonOf(pool.run(double, 1));
    await pool.close();
    expect(await running).toBe("shutting_down/closed");
    expect(await waiting).toBe("shutting_down/closed");
    expect(await reasonOf(pool.run(double, 1))).toBe("shutting_down/closed");
  });

  it("inPoolOr does the work inline when the pool refuses, and counts it", async () => {
    pool = createTaskPool({ size: 1, maxQueued: 0, timeoutMs: 60_000 });
    const uninstall = installTaskPool(pool);
    try {
      const g = gate();
      const running = inPoolOr(hold, g, () => "inline");
      const before = poolFallbacks().queue_full;
      expect(await inPoolOr(double, 4, () => -1)).toBe(-1);
      expect(poolFallbacks().queue_full).toBe(before + 1);
      open(g);
      expect(await running).toBe("released");
      expect(await inPoolOr(double, 4, () => -1)).toBe(8);
    } finally {
      uninstall();
    }
  });
});
