import { readFileSync } from "node:fs";
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";
import { backoffDelay } from "../core/backoff.js";

/**
 * Sluice's one Redis client: ioredis, because BullMQ (the batch queue)
 * needs it, and one driver means one reconnect policy and one set of
 * failure modes. BullMQ 6.7 accepts node-redis too, but its adapter sends
 * pipelined Lua calls with EVALSHA only: after a Redis restart without
 * persistence every such call fails with NOSCRIPT for good.
 */
export type SluiceRedisClient = Redis | Cluster;

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

/** Where Redis is and how to reach it: one server (or a Sentinel-less primary), or a Redis Cluster by its seed nodes. */
export interface RedisTopology {
  /** `redis://` or `rediss://`; its user and password (and TLS) apply to every node of a cluster. */
  readonly url: string;
  /** Redis Cluster: more seed nodes besides `url` (the rest are discovered with CLUSTER SLOTS). */
  readonly cluster?: { readonly nodes: readonly string[] };
  /** Sentinel: `url` and `nodes` are Sentinels watching the primary called `name`; the user, password and TLS of `url` are the data nodes'. */
  readonly sentinel?: { readonly name: string; readonly nodes: readonly string[] };
  /** A PEM CA bundle that signed the servers' certificates (`rediss://` only), instead of the system's. */
  readonly tls?: { readonly caFile?: string };
}

export interface RedisConnectionOptions extends RedisTopology {
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
  const own = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    connectTimeout: Math.max(1_000, options.timeoutMs * 4),
    ...COMMON,
  } as const;
  if (options.cluster) {
    // A cluster's commands to a master that is failing over fail at once too (no offline queue); a MOVED after the
    // failover is followed (redirection is not a retry), and the slot map is read again.
    return new Cluster(seedNodes(options), { ...clusterCommon(options, own), lazyConnect: true, enableOfflineQueue: false });
  }
  if (options.sentinel) return new Redis({ lazyConnect: true, ...own, ...sentinelOptions(options) });
  return new Redis(options.url, { lazyConnect: true, ...own, ...credentials(options) });
}

/**
 * A connection for BullMQ: it connects at once and keeps trying while Redis
 * is away (BullMQ waits for it to be ready). Unlike the store's, its
 * commands wait for a reconnection: `maxRetriesPerRequest: null` is what
 * BullMQ's workers need, a blocking wait on a lost connection is retried,
 * not failed (test/batches.test.ts, "the shared queue loses its Redis").
 */
export function createQueueClient(topology: RedisTopology): SluiceRedisClient {
  const own = { maxRetriesPerRequest: null, connectTimeout: 5_000, ...COMMON } as const;
  if (topology.cluster) return new Cluster(seedNodes(topology), { ...clusterCommon(topology, own), maxRedirections: 64 });
  if (topology.sentinel) return new Redis({ ...own, ...sentinelOptions(topology) });
  return new Redis(topology.url, { ...own, ...credentials(topology) });
}

/**
 * The primary as the Sentinels name it: asked at each connection, and,
 * with the failover detector, followed as soon as a Sentinel announces a
 * switch (the demoted primary's clients are also disconnected by Sentinel).
 * Sentinels are reached without the data nodes' password, with their TLS.
 */
function sentinelOptions(topology: RedisTopology): RedisOptions {
  const tls = credentials(topology).tls;
  return {
    sentinels: seedNodes({ url: topology.url, cluster: { nodes: topology.sentinel?.nodes ?? [] } }),
    name: topology.sentinel!.name,
    failoverDetector: true,
    sentinelRetryStrategy: reconnectDelayMs,
    ...(tls ? { enableTLSForSentinelMode: true, sentinelTLS: tls } : {}),
    ...credentials(topology),
  };
}

/** `url` first, then the other seeds; each as host and port only (the credentials go to every node, see `credentials`). */
function seedNodes(topology: RedisTopology): Array<{ host: string; port: number }> {
  return [topology.url, ...(topology.cluster?.nodes ?? [])].map((url) => {
    const parsed = new URL(url);
    return { host: parsed.hostname.replace(/^\[|\]$/g, ""), port: Number(parsed.port || 6379) };
  });
}

/**
 * What every node of a cluster shares: the user, password and TLS of
 * `url` (ioredis gives a seed URL's credentials to that seed only, not to
 * the nodes it discovers). The slot map is read again every few seconds
 * besides after a MOVED, so a failover that happened while nothing was
 * sent is noticed.
 */
function clusterCommon(topology: RedisTopology, redisOptions: RedisOptions): ClusterOptions {
  return {
    redisOptions: { ...redisOptions, ...credentials(topology) },
    clusterRetryStrategy: reconnectDelayMs,
    slotsRefreshTimeout: Math.max(1_000, (redisOptions.connectTimeout ?? 1_000) * 2),
    slotsRefreshInterval: 5_000,
    scaleReads: "master",
  };
}

/** The user and password of `url`, and TLS for `rediss://` (with the configured CA when given: a private CA is the usual case). */
function credentials(topology: RedisTopology): RedisOptions {
  const parsed = new URL(topology.url);
  const user = parsed.username ? { username: decodeURIComponent(parsed.username) } : {};
  const password = parsed.password ? { password: decodeURIComponent(parsed.password) } : {};
  const tls = parsed.protocol === "rediss:" ? { tls: topology.tls?.caFile ? { ca: readFileSync(topology.tls.caFile, "utf8") } : {} } : {};
  return { ...user, ...password, ...tls };
}
