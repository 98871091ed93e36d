import type { ModelRoute } from "../config/config.js";
import { quoteClientValue } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";
import { type AliasCapabilities, aliasCapabilities } from "./alias-capabilities.js";

/** What a client may know of an alias: no provider configuration, no key. */
export interface ModelInfo {
  readonly id: string;
  /** The provider and model a request goes to first (the first target). */
  readonly provider: string;
  readonly upstreamModel: string;
  readonly capabilities?: AliasCapabilities;
}

/** Alias → route, and the catalog the edges list. */
export interface RouteTable {
  has(alias: string): boolean;
  lookup(alias: string): ModelRoute;
  catalog(): readonly ModelInfo[];
}

export function createRouteTable(models: ReadonlyMap<string, ModelRoute>): RouteTable {
  const catalog = [...models.values()].map((route) => ({ id: route.alias, provider: route.targets[0]!.provider.name, upstreamModel: route.targets[0]!.model, capabilities: aliasCapabilities(route.targets) }));
  return {
    has: (alias) => models.has(alias),
    lookup(alias) {
      const found = models.get(alias);
      if (!found) {
        throw new GatewayError("unknown_model", `unknown model ${quoteClientValue(alias)}: not configured on this gateway (see ListModels or GET /v1/models)`, { field: "model" });
      }
      return found;
    },
    catalog: () => catalog,
  };
}

const tables = new WeakMap<ReadonlyMap<string, ModelRoute>, RouteTable>();

/** The route table of a configuration's models, made once per configuration (a reload makes a new one). */
export function routeTableOf(models: ReadonlyMap<string, ModelRoute>): RouteTable {
  let table = tables.get(models);
  if (!table) {
    table = createRouteTable(models);
    tables.set(models, table);
  }
  return table;
}
