import type { SluiceRedisClient } from "../../store/redis-connection.js";
import { within } from "../../store/within.js";
import type { CredentialStore } from "./credential-store.js";

export interface RedisCredentialStoreOptions {
  readonly client: SluiceRedisClient;
  /** The store's key prefix; entries live under `{prefix}mcp:credential:{binding digest}`. */
  readonly prefix: string;
  /** Every Redis call is bounded by this. */
  readonly timeoutMs: number;
  readonly now: () => number;
}

/**
 * Sealed per-key tokens in the shared Redis, so every replica calls a
 * server with the same key's token; Redis expires each entry with its
 * token. Unlike a cache, a failure here is an error: a token the operator
 * set and the gateway silently forgot would be worse.
 */
export function createRedisCredentialStore(options: RedisCredentialStoreOptions): CredentialStore {
  const { client } = options;
  const keyOf = (digest: string) => `${options.prefix}mcp:credential:${digest}`;
  return {
    async put(digest, sealed, expiresAt) {
      await within(client.set(keyOf(digest), sealed, "PX", Math.max(1, expiresAt - options.now())), options.timeoutMs, "mcp credential put");
    },
    async get(digest) {
      const value = await within(client.get(keyOf(digest)), options.timeoutMs, "mcp credential get");
      return typeof value === "string" ? value : undefined;
    },
    async delete(digest) {
      return (await within(client.del(keyOf(digest)), options.timeoutMs, "mcp credential delete")) > 0;
    },
  };
}
