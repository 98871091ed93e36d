import type { Config, ConfiguredKey, ModelRoute, ProviderConfig } from "./config.js";

export interface NamedChanges {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  readonly changed: readonly string[];
}

/** What a reload changed, by name, for its log line: never a value, so never a key. */
export interface ConfigChanges {
  readonly models: NamedChanges;
  readonly providers: NamedChanges;
  /** Virtual keys by name (a new key value under the same name is a change; the value is only compared). */
  readonly keys: NamedChanges;
  readonly teams: NamedChanges;
  readonly businessLines: NamedChanges;
}

/**
 * A provider as compared: its key by value (a Secret serialises as
 * "[redacted]", so a new key would otherwise look unchanged). Only compared,
 * never logged.
 */
function providerIdentity(p: ProviderConfig): string {
  return JSON.stringify({ ...p, apiKey: p.apiKey?.reveal() ?? null });
}

/** An alias as compared: its targets name their provider; a provider's own change is reported under providers. */
function routeIdentity(route: ModelRoute): string {
  return JSON.stringify({ ...route, targets: route.targets.map((t) => ({ ...t, provider: t.provider.name })) });
}

const keysByName = (keys: readonly ConfiguredKey[]) => new Map(keys.map((k) => [k.name, k]));

function compare<T>(previous: ReadonlyMap<string, T>, next: ReadonlyMap<string, T>, identity: (value: T) => string): NamedChanges {
  const added = [...next.keys()].filter((name) => !previous.has(name));
  const removed = [...previous.keys()].filter((name) => !next.has(name));
  const changed = [...next.keys()].filter((name) => previous.has(name) && identity(previous.get(name)!) !== identity(next.get(name)!));
  return { added, removed, changed };
}

/** The aliases, providers, keys, teams and business lines a new configuration adds, removes or changes. */
export function diffConfig(previous: Config, next: Config): ConfigChanges {
  return {
    models: compare(previous.models, next.models, routeIdentity),
    providers: compare(previous.providers, next.providers, providerIdentity),
    keys: compare(keysByName(previous.auth.keys), keysByName(next.auth.keys), (k) => JSON.stringify(k)),
    teams: compare(previous.auth.teams, next.auth.teams, (t) => JSON.stringify(t)),
    businessLines: compare(previous.auth.businessLines, next.auth.businessLines, (b) => JSON.stringify(b)),
  };
}
