import { readFile } from "node:fs/promises";
import { parseDocument } from "yaml";
import type { z } from "zod";
import type { ProviderKind } from "../core/chat-request.js";
import { configSchema, type ConfigInput, DEFAULT_TIMEOUTS, type TimeoutsConfig } from "./schema.js";
import { createSecret, type Secret } from "./secret.js";

/** A provider ready for use: defaults applied, key resolved from the environment. */
export interface ProviderConfig {
  readonly name: string;
  readonly kind: ProviderKind;
  readonly baseUrl: string;
  readonly apiKey?: Secret;
  readonly timeouts: TimeoutsConfig;
}

/** An alias ready for use: provider attached, timeouts merged (model over provider over defaults). */
export interface ModelRoute {
  readonly alias: string;
  readonly provider: ProviderConfig;
  readonly upstreamModel: string;
  readonly timeouts: TimeoutsConfig;
  /** Drop parameters the provider cannot honour instead of rejecting the request. */
  readonly dropUnsupportedParams: boolean;
}

/** The gateway's whole configuration after validation. Immutable: requests never modify it. */
export interface Config {
  readonly server: {
    readonly host: string;
    readonly port: number;
    readonly drainMs: number;
    readonly keepaliveMs: number;
    readonly debugEndpoints: boolean;
    readonly headersTimeoutMs: number;
    readonly requestTimeoutMs: number;
    readonly idleTimeoutMs: number;
    readonly sendTimeoutMs: number;
    readonly maxConnections: number;
    readonly maxStreamsPerConnection: number;
  };
  readonly log: { readonly level: string };
  readonly limits: {
    readonly maxEventBytes: number;
    readonly maxRequestBytes: number;
    readonly maxRequestElements: number;
    readonly maxJsonDepth: number;
  };
  readonly facade: { readonly keepaliveMs: number };
  readonly providers: ReadonlyMap<string, ProviderConfig>;
  readonly models: ReadonlyMap<string, ModelRoute>;
}

/** limits.maxRequestBytes when neither it nor the deprecated facade.maxBodyBytes is set. */
const DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/**
 * Thrown for any configuration problem. The message starts with the path of
 * the bad field (e.g. `providers.main.baseUrl`) so start-up failures point
 * at the line to fix.
 */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

function formatPath(path: readonly PropertyKey[]): string {
  return path.length === 0 ? "(root)" : path.map(String).join(".");
}

function formatIssues(source: string, issues: readonly z.core.$ZodIssue[]): string {
  const lines = issues.map((issue) => `  ${formatPath(issue.path)}: ${issue.message}`);
  return `invalid configuration in ${source}:\n${lines.join("\n")}`;
}

/**
 * Validates a configuration object and resolves it for use. `env` supplies
 * API keys; a provider whose key variable is unset fails here, at start-up,
 * not on its first request.
 */
export function resolveConfig(input: unknown, env: NodeJS.ProcessEnv, source = "configuration"): Config {
  const parsed = configSchema.safeParse(input);
  if (!parsed.success) throw new ConfigError(formatIssues(source, parsed.error.issues));
  const file = parsed.data;

  const providers = new Map<string, ProviderConfig>();
  for (const [name, p] of Object.entries(file.providers)) {
    let apiKey: Secret | undefined;
    if (p.apiKeyEnv !== undefined) {
      const value = env[p.apiKeyEnv];
      if (value === undefined || value === "") {
        throw new ConfigError(
          `invalid configuration in ${source}:\n  providers.${name}.apiKeyEnv: environment variable ${p.apiKeyEnv} is not set`,
        );
      }
      apiKey = createSecret(value);
    }
    providers.set(name, {
      name,
      kind: p.kind,
      baseUrl: p.baseUrl.replace(/\/+$/, ""),
      ...(apiKey ? { apiKey } : {}),
      timeouts: { ...DEFAULT_TIMEOUTS, ...p.timeouts },
    });
  }

  const models = new Map<string, ModelRoute>();
  for (const alias of Object.keys(file.models).sort()) {
    const m = file.models[alias]!;
    const provider = providers.get(m.provider)!;
    models.set(alias, {
      alias,
      provider,
      upstreamModel: m.model,
      timeouts: { ...provider.timeouts, ...m.timeouts },
      dropUnsupportedParams: m.dropUnsupportedParams,
    });
  }

  return {
    server: file.server,
    log: file.log,
    limits: {
      maxEventBytes: file.limits.maxEventBytes,
      maxRequestBytes: file.limits.maxRequestBytes ?? file.facade.maxBodyBytes ?? DEFAULT_MAX_REQUEST_BYTES,
      maxRequestElements: file.limits.maxRequestElements,
      maxJsonDepth: file.limits.maxJsonDepth,
    },
    facade: { keepaliveMs: file.facade.keepaliveMs },
    providers,
    models,
  };
}

/** Reads, parses and resolves a YAML configuration file. */
export async function loadConfigFile(path: string, env: NodeJS.ProcessEnv): Promise<Config> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new ConfigError(`cannot read configuration file ${path}: ${(error as NodeJS.ErrnoException).code ?? "error"}`);
  }
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(`invalid YAML in ${path}: ${doc.errors[0]!.message}`);
  }
  return resolveConfig(doc.toJS() as ConfigInput, env, path);
}
