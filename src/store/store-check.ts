import { createStoreClient, type RedisTopology, type SluiceRedisClient } from "./redis-connection.js";
import { redisRejection, StoreRejectedError } from "./redis-rejection.js";
import { redisScript } from "./redis-script.js";
import { within } from "./within.js";

/**
 * Two keys in one script, as every admission's: a standalone client on a
 * cluster node (or a prefix without a hash tag) gets CROSSSLOT or MOVED,
 * an ACL user without EVAL, EVALSHA, SET or DEL or without the prefix's
 * keys gets NOPERM: what an admission would get, before the first one.
 */
const PROBE = redisScript(`redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000)
redis.call('DEL', KEYS[2])
return 1`);

/** The store's probe: resolves when Redis runs a two-key script under `prefix`; rejects with Redis's error otherwise. */
export async function probeStore(client: SluiceRedisClient, prefix: string, timeoutMs: number): Promise<void> {
  await within(PROBE(client, [`${prefix}probe:a`, `${prefix}probe:b`], [String(Date.now())]), timeoutMs, "store probe");
}

/**
 * Whether the node at `url` is a cluster node (`INFO cluster`), over a
 * connection of its own, closed at once; undefined when it cannot be
 * reached within `timeoutMs` (then nothing can be said at start).
 */
async function clusterEnabled(topology: RedisTopology, timeoutMs: number): Promise<boolean | undefined> {
  const client = createStoreClient({ url: topology.url, timeoutMs, ...(topology.tls ? { tls: topology.tls } : {}) });
  client.on("error", () => undefined);
  try {
    await within(client.connect(), timeoutMs, "store topology");
    const info = String(await within(client.info("cluster"), timeoutMs, "store topology"));
    return /cluster_enabled:1/.test(info);
  } catch (error) {
    if (redisRejection(error) !== undefined) throw rejection(error, "checking the topology");
    return undefined;
  } finally {
    client.disconnect();
  }
}

const rejection = (error: unknown, doing: string) => {
  const code = redisRejection(error) ?? "ERR";
  const message = error instanceof Error ? error.message.slice(0, 200) : "unknown";
  return new StoreRejectedError(code, `store.redis refused ${doing}: ${message}`);
};

/**
 * The start-time check: the configured topology is the server's (a
 * cluster node behind a standalone configuration fails every admission
 * with CROSSSLOT; a standalone server behind `cluster` never gives a slot
 * map), and `client` (the store's, connected by then or not) runs the
 * probe. Throws StoreRejectedError, whose message says what to change;
 * returns quietly when Redis cannot be reached in time (the fail mode
 * applies, and the probe runs again at each connection).
 */
export async function checkStoreAtStart(options: { readonly topology: RedisTopology; readonly prefix: string; readonly client: SluiceRedisClient; readonly timeoutMs: number }): Promise<"checked" | "unreachable"> {
  const { topology, timeoutMs } = options;
  // A Sentinel is not a data node: only the probe, through the primary it names, says something.
  const isCluster = topology.sentinel ? false : await clusterEnabled(topology, timeoutMs);
  if (isCluster === undefined) return "unreachable";
  if (isCluster && !topology.cluster) {
    throw new StoreRejectedError("TOPOLOGY", "store.redis.url is a node of a Redis Cluster: set store.redis.cluster (and a prefix with a hash tag, e.g. `{sluice}:`)");
  }
  if (!isCluster && topology.cluster) throw new StoreRejectedError("TOPOLOGY", "store.redis.cluster is set but store.redis.url is not a cluster node (cluster_enabled:0)");
  if (!(await readyWithin(options.client, timeoutMs))) return "unreachable";
  try {
    await probeStore(options.client, options.prefix, timeoutMs);
  } catch (error) {
    if (redisRejection(error) !== undefined) throw rejection(error, "a two-key script under the prefix");
    return "unreachable";
  }
  return "checked";
}

/** Resolves true once `client` is ready, false after `timeoutMs`. */
function readyWithin(client: SluiceRedisClient, timeoutMs: number): Promise<boolean> {
  if (client.status === "ready") return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (value: boolean) => {
      clearTimeout(timer);
      client.off("ready", onReady);
      resolve(value);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), timeoutMs);
    client.on("ready", onReady);
  });
}
