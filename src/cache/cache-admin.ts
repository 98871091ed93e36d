import type { Config } from "../config/config.js";
import { quoteClientValue } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";
import type { AliasCacheStats, ResponseCache } from "./response-cache.js";

/** AdminService's cache calls, over the aliases of the configuration in force. */
export interface CacheAdmin {
  /** Removes an alias's entries, a key's, or one key's under one alias; throws `invalid_request` without either. */
  purge(alias: string, keyName: string): Promise<number>;
  stats(): Promise<AliasCacheStats[]>;
}

/** The aliases that have a response cache, in configuration order. */
export function cachedAliasesOf(config: Config): string[] {
  return [...config.models.values()].filter((route) => route.cache !== undefined).map((route) => route.alias);
}

export function createCacheAdmin(cache: ResponseCache, config: () => Config): CacheAdmin {
  const cachedAliases = () => cachedAliasesOf(config());
  return {
    purge(alias, keyName) {
      if (alias === "" && keyName === "") return Promise.reject(new GatewayError("invalid_request", "name an alias, a key, or both", { field: "alias" }));
      const aliases = cachedAliases();
      if (alias !== "" && !aliases.includes(alias)) return Promise.reject(new GatewayError("invalid_request", `model ${quoteClientValue(alias)} has no cache`, { field: "alias" }));
      return cache.purge(alias === "" ? aliases : [alias], keyName === "" ? undefined : `key=${keyName}`);
    },
    stats: () => cache.stats(cachedAliases()),
  };
}
