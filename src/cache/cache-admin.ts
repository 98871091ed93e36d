import type { Config } from "../config/config.js";
import { quoteClientValue } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";
import { MAX_REQUEST_ID_CHARS } from "../core/request-id.js";
import { type AliasCacheStats, keyScope, type ResponseCache } from "./response-cache.js";

/** AdminService's cache calls, over the aliases of the configuration in force. */
export interface CacheAdmin {
  /**
   * Removes an alias's entries, a key's, one key's under one alias, or the
   * entries one request produced (`requestId`, alone); throws
   * `invalid_request` when nothing, or a request id with anything else, is named.
   */
  purge(alias: string, keyName: string, requestId?: string): Promise<number>;
  stats(): Promise<AliasCacheStats[]>;
}

/** The aliases that have a response cache, in configuration order. */
export function cachedAliasesOf(config: Config): string[] {
  return [...config.models.values()].filter((route) => route.cache !== undefined).map((route) => route.alias);
}

/**
 * `keyIdsNamed`: the ids of the keys that bear a name now (configured or
 * runtime): purging a key's entries by name purges those, never a revoked
 * key's of the same name, which nobody can read anyway and which leave by
 * their TTL.
 */
export function createCacheAdmin(cache: ResponseCache, config: () => Config, keyIdsNamed: (name: string) => readonly string[]): CacheAdmin {
  const cachedAliases = () => cachedAliasesOf(config());
  return {
    purge(alias, keyName, requestId = "") {
      if (requestId !== "") {
        if (alias !== "" || keyName !== "") return Promise.reject(new GatewayError("invalid_request", "request_id names entries alone: give it without alias or key_name", { field: "request_id" }));
        // Longer than any id the gateway keeps: it names no entry, and never reaches a store.
        if (requestId.length > MAX_REQUEST_ID_CHARS) return Promise.reject(new GatewayError("invalid_request", `request_id is longer than ${MAX_REQUEST_ID_CHARS} characters`, { field: "request_id" }));
        return cache.purgeProducedBy(requestId);
      }
      if (alias === "" && keyName === "") return Promise.reject(new GatewayError("invalid_request", "name an alias, a key, both, or a request id", { field: "alias" }));
      const aliases = cachedAliases();
      if (alias !== "" && !aliases.includes(alias)) return Promise.reject(new GatewayError("invalid_request", `model ${quoteClientValue(alias)} has no cache`, { field: "alias" }));
      const purged = alias === "" ? aliases : [alias];
      if (keyName === "") return cache.purge(purged);
      return (async () => {
        let n = 0;
        for (const id of keyIdsNamed(keyName)) n += await cache.purge(purged, keyScope(id));
        return n;
      })();
    },
    stats: () => cache.stats(cachedAliases()),
  };
}
