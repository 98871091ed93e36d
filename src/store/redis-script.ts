import { createHash } from "node:crypto";
import type { SluiceRedisClient } from "./redis-connection.js";

/** A Lua script called with its keys and arguments; the reply as Redis sent it. */
export type RedisScript = (client: SluiceRedisClient, keys: readonly string[], args: readonly string[]) => Promise<unknown>;

/**
 * Runs a script by its SHA-1 (EVALSHA), loading it once when Redis does not
 * know it (a new Redis, a restart without persistence, SCRIPT FLUSH): one
 * round trip per call in the steady state, whatever the script's size.
 * The number of keys is each call's own, so a script may take one set of
 * keys per tenancy level.
 */
export function redisScript(source: string): RedisScript {
  const sha = createHash("sha1").update(source).digest("hex");
  return async (client, keys, args) => {
    try {
      return await client.evalsha(sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
      return client.eval(source, keys.length, ...keys, ...args);
    }
  };
}
