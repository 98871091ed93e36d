import { Redis } from "ioredis";
import { backoffDelay } from "../core/backoff.js";

/**
 * Sluice's one Redis client: ioredis, because BullMQ (the batch queue)
 * needs it, and one driver means one reconnect policy and one set of
 * failure modes. BullMQ 6.7 accepts node-redis too, but its adapter sends
 * pipelined Lua calls with EVALSHA only: after a Redis restart without
 * persistence every such call fails with NOSCRIPT for good.
 */
export type SluiceRedisClient = Redis;

/** Longest pause between reconnection attempts: a Redis that comes back is used within about this. */
const MAX_RECONNECT_DELAY_MS = 500;

/** The reconnect policy of every connection: 25 ms doubling, at most half a second. `attempt` counts from 1. */
export const reconnectDelayMs = (attempt: number): number => backoffDelay(attempt - 1, { baseMs: 25, maxMs: MAX_RECONNECT_DELAY_MS });

/**
 * What every connection shares. No CLIENT SETINFO: ioredis sends it (after
 * reading its package.json) before its ready check, so a connection would
 * take three round trips to be ready, and a gateway's first requests after
 * start would find the store not ready yet. Ready is then one round trip
 * after connecting (INFO): Redis answered, as with node-redis's handshake.
 */
const COMMON = { retryStrategy: reconnectDelayMs, disableClientInfo: true } as const;

export interface RedisConnectionOptions {
  readonly url: string;
  /** Bounds connection set-up (a multiple of it); commands are bounded by their callers (within.ts, redis-watch.ts). */
  readonly timeoutMs: number;
}

/**
 * A connection for the store (and what borrows it: cache, replay, stream
 * log, drains). Unconnected until `connect()`, so the caller listens for
 * `error` first. Commands fail at once while it is disconnected (no offline
 * queue: a stream must not wait for a reconnect), and those written when
 * the connection drops are rejected at once and never sent again (the
 * fail-open store decides what to do with them). No command timeout: a
 * written command cannot be withdrawn, and the store's watch (redis-watch.ts)
 * waits for a slow Redis that still answers rather than give up per call.
 */
export function createStoreClient(options: RedisConnectionOptions): SluiceRedisClient {
  return new Redis(options.url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    connectTimeout: Math.max(1_000, options.timeoutMs * 4),
    ...COMMON,
  });
}

/**
 * A connection for BullMQ: it connects at once and keeps trying while Redis
 * is away (BullMQ waits for it to be ready). Unlike the store's, its
 * commands wait for a reconnection: `maxRetriesPerRequest: null` is what
 * BullMQ's workers need, a blocking wait on a lost connection is retried,
 * not failed (test/batches.test.ts, "the shared queue loses its Redis").
 */
export function createQueueClient(url: string): SluiceRedisClient {
  return new Redis(url, { maxRetriesPerRequest: null, connectTimeout: 5_000, ...COMMON });
}
