import { GatewayError } from "../core/errors.js";
import type { PoolFailure, Task, TaskPool } from "./task-pool.js";

/**
 * The process's pool, installed by app.ts when `workers.enabled` (and
 * removed at shutdown): the rooms that offload work (usage/, compliance/)
 * reach it here rather than through every call's dependencies, as they
 * reach the tokenizer, which is process-wide too.
 */
let installed: TaskPool | undefined;
const fallbacks: Record<PoolFailure, number> = { queue_full: 0, timeout: 0, worker_failed: 0, closed: 0 };

/** Installs `pool` for the process; the function returned removes it (unless another was installed since: tests start several gateways). */
export function installTaskPool(pool: TaskPool): () => void {
  installed = pool;
  return () => {
    if (installed === pool) installed = undefined;
  };
}

export function installedTaskPool(): TaskPool | undefined {
  return installed;
}

/** Tasks done on the relay's thread because the pool could not do them, by why: the sluice.workers.fallbacks metric. */
export function poolFallbacks(): Readonly<Record<PoolFailure, number>> {
  return { ...fallbacks };
}

/**
 * `task` in the pool, or `inline` when there is no pool or the pool could
 * not do it (queue full, deadline, a crashed worker, closing). Falling
 * back is the safer choice for this work: what the pool does here is an
 * optimisation of work the gateway always did inline (bounded counting,
 * sliced screening), so a busy or broken pool costs the event loop time,
 * never a request. A caller that left still gets its abort.
 */
export async function inPoolOr<P, R>(task: Task<P, R>, payload: P, inline: () => R | Promise<R>, signal?: AbortSignal): Promise<R> {
  const pool = installed;
  if (!pool) return inline();
  try {
    return await pool.run(task, payload, signal ? { signal } : {});
  } catch (error) {
    signal?.throwIfAborted();
    if (!(error instanceof GatewayError) || !(error.reason !== undefined && error.reason in fallbacks)) throw error;
    fallbacks[error.reason as PoolFailure]++;
    return inline();
  }
}
