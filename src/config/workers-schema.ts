import { z } from "zod";

/**
 * The worker pool for CPU-heavy per-request work (docs/operations.md,
 * "Worker pool"): token counts and PII screening of long texts run there,
 * off the thread that relays every stream.
 */
export const workersSchema = z
  .strictObject({
    enabled: z.boolean().default(true).meta({ description: "Long texts are counted and screened in worker threads; `false` does that work on the relay's thread (counting inline, screening in slices), as before the pool." }),
    size: z.number().int().min(1).max(64).optional().meta({ description: "Worker threads at most, started on first need.", unset: "one per core but one, at least one" }),
    maxQueued: z.number().int().min(0).max(100_000).default(256).meta({ description: "Tasks that may wait for a free worker; past it a task is done on the relay's thread instead (counted in `sluice.workers.fallbacks`)." }),
    timeoutMs: z.number().int().min(10).max(600_000).default(10_000).meta({
      description: "A task's deadline, waiting included. A worker past it is taken as hung and replaced; the task is then done on the relay's thread (a count is bounded, screening goes in slices).",
    }),
  })
  .prefault({})
  .meta({ description: "Worker threads for CPU-heavy per-request work: token counts and PII screening of long texts ([Operations](operations.md#worker-pool)).", reload: "restart" });
