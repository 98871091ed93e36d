import { Redis } from "ioredis";
import type { QueueClient } from "./queued-runner.js";
import { backoffDelay } from "../core/backoff.js";

/**
 * A Redis client for the batch queue: ioredis, BullMQ's own driver,
 * rather than the node-redis client the rest of Sluice uses. BullMQ 6.7
 * accepts node-redis too, but its adapter sends pipelined Lua calls
 * (`addBulk`, moving a job on) with EVALSHA only: after a Redis restart
 * without persistence (the script cache gone) every such call fails with
 * NOSCRIPT on that connection for good. ioredis falls back to EVAL there,
 * and `test/batches.test.ts` ("the shared queue loses its Redis") proves
 * the queue recovers. `maxRetriesPerRequest: null` is what BullMQ's
 * workers need: a blocking wait on a lost connection is retried, not failed.
 */
export function createQueueClient(url: string): QueueClient {
  // It connects at once and keeps trying while Redis is away; BullMQ waits for it to be ready.
  return new Redis(url, { maxRetriesPerRequest: null, connectTimeout: 5_000, retryStrategy: (times: number) => backoffDelay(times, { baseMs: 50, maxMs: 2_000 }) });
}
