import type { ProviderKind } from "../core/chat-request.js";
import { type AzureConfig, resolveAzure } from "./azure-schema.js";
import { type BedrockSettings, bedrockSettings } from "./bedrock-schema.js";
import { builtInCatalog } from "./built-in-catalog.js";
import type { Capabilities } from "./capability-table.js";
import { readConfigDocument } from "./config-file.js";
import { sha256Hex } from "./key-hash.js";
import type { McpGrant, McpSettings } from "./mcp-schema.js";
import { lookupModel, type ModelCatalog } from "./model-catalog.js";
import { withCacheWriteDefaults } from "./price-defaults.js";
import { type ConfigProblem, checkConfig, formatPath } from "./problems.js";
import { providerBaseUrl } from "./provider-base-url.js";
import { type PresetName, presetOf } from "./provider-presets.js";
import { type AnthropicThinking, type ConfigFile, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_TIMEOUTS, type TimeoutsConfig } from "./schema.js";
import { createSecret, type Secret } from "./secret.js";
import type {
  AuditSettings,
  BatchSettings,
  BreakerConfig,
  BudgetPeriod,
  CacheScope,
  CacheSettings,
  ConsoleConfig,
  ContextSettings,
  CustomPattern,
  KeyLimits,
  LedgerSettings,
  PiiPolicy,
  PostgresStoreConfig,
  Price,
  RedisStoreConfig,
  ResponsesSettings,
  ResumeSettings,
  ShadowSettings,
  Strategy,
  TelemetryConfig,
  WorkersSettings,
} from "./settings.js";
import type { TlsCredentials } from "./tls-files.js";
import { type VertexSettings, withKeyFileFromEnv } from "./vertex-schema.js";

// The sections the running gateway uses as the file writes them are in
// settings.ts, typed from the schema's output. The interfaces below are what
// buildConfig makes of the file: secrets read, defaults decided from other
// settings, targets attached, durations converted. Each says what it adds.

export type {
  AuditSettings,
  BatchSettings,
  BreakerConfig,
  BudgetPeriod,
  CacheScope,
  CacheSettings,
  ConsoleAccess,
  ConsoleConfig,
  ContextSettings,
  CustomPattern,
  KeyLimits,
  LedgerSettings,
  PiiMode,
  PiiPolicy,
  PostgresStoreConfig,
  Price,
  RedisStoreConfig,
  ResponsesSettings,
  ResumeSettings,
  ShadowSettings,
  Strategy,
  TelemetryConfig,
} from "./settings.js";

/** Admission in front of one provider: concurrency, and a bounded FIFO queue behind it. */
export interface AdmissionConfig {
  /** Streams in flight at once; Infinity when unlimited. */
  readonly maxConcurrent: number;
  readonly maxWaiting: number;
  readonly timeoutMs: number;
  /** The share of maxConcurrent batch lines may take (batch.maxShare); they start only while no interactive call waits. */
  readonly backgroundShare?: number;
}

/** A provider ready for use: defaults applied, key resolved from the environment. */
export interface ProviderConfig {
  readonly name: string;
  readonly kind: ProviderKind;
  readonly baseUrl: string;
  readonly apiKey?: Secret;
  readonly timeouts: TimeoutsConfig;
  readonly admission: AdmissionConfig;
  readonly breaker: BreakerConfig;
  /** Anthropic: the thinking form for all its models; unset = by model name. */
  readonly thinking?: AnthropicThinking;
  /** Runs where the data may go (docs/compliance.md, "Local targets"). */
  readonly local?: boolean;
  /** `azure-openai`: its resource, API version and authentication, secrets read. */
  readonly azure?: AzureConfig;
  /** `openai`: the OpenAI-compatible cloud whose quirks its requests follow. */
  readonly preset?: PresetName;
  /** `bedrock`: its region and credentials. */
  readonly bedrock?: BedrockSettings;
  /** `vertex`: its project, location and credentials. */
  readonly vertex?: VertexSettings;
}

/** One place an alias can send a request: a provider and its model id. */
export interface RouteTarget {
  /** `provider/model`: the identity breakers and statistics are kept under, shared by every alias that uses it. */
  readonly key: string;
  readonly provider: ProviderConfig;
  readonly model: string;
  readonly weight: number;
  /** Its own price, whole, else its catalog entry's; none: it costs nothing. */
  readonly price?: Price;
  /** The catalog entry it inherits from (its `catalog:`, else the one its model id names), if any. */
  readonly catalog?: string;
  /** Target over alias over provider over defaults. */
  readonly timeouts: TimeoutsConfig;
  /** Anthropic: the thinking form, target over provider; unset = by model name. */
  readonly thinking?: AnthropicThinking;
  /** Its own `local`, or its provider's: whether local-only requests may go here. */
  readonly local?: boolean;
  /** The alias's promptCache: `auto` marks the stable prefix on providers that cache on request (Anthropic). */
  readonly promptCache?: "auto";
  /** Its catalog entry's, field by field under what the configuration declares (routing/request-needs.ts reads it). */
  readonly capabilities?: Capabilities;
}

export interface RetryConfig {
  /** Attempts across all targets, hedges included. */
  readonly maxAttempts: number;
  readonly baseBackoffMs: number;
  readonly maxBackoffMs: number;
}

/** An alias ready for use: targets attached, timeouts merged. */
export interface ModelRoute {
  readonly alias: string;
  readonly targets: readonly RouteTarget[];
  readonly strategy: Strategy;
  readonly retry: RetryConfig;
  readonly hedge?: { readonly afterMs: number };
  /** Drop parameters a target's provider cannot honour instead of rejecting the request. */
  readonly dropUnsupportedParams: boolean;
  /** A hosted tool no target can run: dropped and named (`offer`, absent) or refused. */
  readonly hostedTools?: "offer" | "refuse";
  /** The alias's response cache; absent: off. */
  readonly cache?: AliasCache;
  /** Personal data in the alias's requests (docs/compliance.md). */
  readonly pii?: PiiPolicy;
  /** Served only from local targets, whatever the request holds. */
  readonly localOnly?: boolean;
  /** How a conversation longer than the targets' windows is handled; absent: refused (`reject`, the defaults). */
  readonly context?: ContextSettings;
  /** Tool results longer than this are cut to head and tail. */
  readonly maxToolResultTokens?: number;
  /** Sent first in every request of the alias (pipeline/stages/system-prompt.ts). */
  readonly systemPrompt?: string;
  /** Keep a sample of completed calls for evaluation replay (recording/recorder.ts). */
  readonly record?: { readonly sampleRate: number; readonly maxPerDay: number };
  /** Mirror a sample of completed calls to a candidate alias (evaluation/shadow.ts). */
  readonly shadow?: ShadowSettings;
}

/** models.<alias>.cache, resolved. */
export interface AliasCache {
  /** Absent: no exact cache. */
  readonly exactTtlMs?: number;
  readonly semantic?: SemanticCache;
  readonly scope: CacheScope;
  readonly cacheToolCalls: boolean;
}

/** models.<alias>.cache.semantic, resolved: its TTL in milliseconds, as every other duration in the running configuration. */
export interface SemanticCache {
  readonly embeddingModel: string;
  readonly threshold: number;
  readonly ttlMs: number;
  readonly maxEntries: number;
}

/** Spend allowed per UTC calendar period, in integer micro-dollars. */
export interface KeyBudget {
  readonly usdMicros: number;
  readonly period: BudgetPeriod;
}

/** A team or business line: limits and a budget shared by every key below it. */
export interface LevelSettings {
  readonly name: string;
  /**
   * What the level's counters, spend and team cache scope are kept under,
   * never reused: minted at creation for runtime levels; for configured
   * ones, `id` as written, or the name (tenancy/level-id.ts).
   */
  readonly id: string;
  readonly limits: KeyLimits;
  readonly budget?: KeyBudget;
  /** MCP tools the level's keys may reach (mcp/grants.ts); absent: no limit from this level. */
  readonly mcp?: McpGrant;
}

/** A team, and the business line it belongs to. */
export interface TeamSettings extends LevelSettings {
  readonly businessLine?: string;
  readonly pii?: PiiPolicy;
  /** Every request of the team's keys stays on local targets. */
  readonly localOnly?: boolean;
}

/** What a virtual key may do, wherever it was defined (configuration or the admin service). */
export interface KeySettings {
  readonly name: string;
  /** The key's team: its requests count against the team's (and its business line's) limits and budgets too. */
  readonly team?: string;
  /** Aliases the key may use; every alias when absent. */
  readonly models?: readonly string[];
  readonly limits: KeyLimits;
  readonly budget?: KeyBudget;
  readonly pii?: PiiPolicy;
  /** Every request of this key stays on local targets. */
  readonly localOnly?: boolean;
  /** MCP tools the key may reach (mcp/grants.ts); absent: no limit from the key. */
  readonly mcp?: McpGrant;
}

/** A configured key: its settings and the SHA-256 (hex) of the key. The plaintext is never kept. */
export interface ConfiguredKey extends KeySettings {
  readonly sha256: string;
}

/** Budget alerts (docs/tenancy.md, "Budget alerts"). */
export interface AlertSettings {
  /** Ascending fractions of a budget. */
  readonly thresholds: readonly number[];
  readonly webhook?: {
    readonly url: string;
    readonly secret: Secret;
    readonly timeoutMs: number;
    readonly maxAttempts: number;
    readonly queueMax: number;
  };
}

/** The gateway's whole configuration after validation. Immutable: requests never modify it. */
export interface Config {
  /** As written, with the TLS files read (absent: cleartext h2c and HTTP/1.1). */
  readonly server: Omit<ConfigFile["server"], "tls"> & { readonly tls?: TlsCredentials };
  readonly log: ConfigFile["log"];
  readonly telemetry: TelemetryConfig;
  /** As written, with maxRequestBytes decided: as written, else the deprecated facade.maxBodyBytes, else the default. */
  readonly limits: Omit<ConfigFile["limits"], "maxRequestBytes"> & { readonly maxRequestBytes: number };
  /** Without the deprecated maxBodyBytes, which is read into limits.maxRequestBytes. */
  readonly facade: Omit<ConfigFile["facade"], "maxBodyBytes">;
  readonly providers: ReadonlyMap<string, ProviderConfig>;
  readonly models: ReadonlyMap<string, ModelRoute>;
  /** The model catalog targets inherited from (the built-in one, with `catalog.file` over it); absent on configurations built by hand. */
  readonly catalog?: ModelCatalog;
  readonly auth: {
    /** Every edge requires a key: a key is configured, or the admin service is on (it exists to create keys). */
    readonly required: boolean;
    /** SHA-256 (hex) of the admin key; the admin service is off without one. */
    readonly adminKeySha256?: string;
    readonly keys: readonly ConfiguredKey[];
    readonly teams: ReadonlyMap<string, TeamSettings>;
    readonly businessLines: ReadonlyMap<string, LevelSettings>;
    /** Tag keys kept for cost allocation (auth.tagKeys). */
    readonly tagKeys: ReadonlySet<string>;
    /** HTTP status of a budget refusal (auth.budgetExceededStatus). */
    readonly budgetExceededStatus: 402 | 429;
  };
  readonly ledger: LedgerSettings;
  readonly batch: BatchSettings;
  readonly workers: WorkersSettings;
  readonly alerts: AlertSettings;
  /** Absent: limits, spend and usage are kept in process. */
  readonly store?: { readonly redis?: RedisStoreConfig; readonly postgres?: PostgresStoreConfig };
  readonly resume: ResumeSettings;
  readonly responses: ResponsesSettings;
  /** The MCP gateway (config/mcp-schema.ts). */
  readonly mcp: McpSettings;
  readonly console: ConsoleConfig;
  readonly cache: CacheSettings;
  readonly compliance: { readonly patterns: readonly CustomPattern[]; readonly audit: AuditSettings };
}

/**
 * Thrown for any configuration problem. Each line of the message starts
 * with the path of a bad field (e.g. `providers.main.baseUrl`) so start-up
 * failures point at what to fix; every problem is listed, not the first.
 */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/**
 * One line per problem, `path: message (line N)` where the line is known, in
 * file order so the report reads top to bottom. The same lines make the
 * start-up and check-config report and the `config.reload_failed` log line.
 */
export function problemLines(problems: readonly ConfigProblem[], lineOf: (path: readonly PropertyKey[]) => number | undefined = () => undefined): string[] {
  const located = problems.map((problem) => ({ problem, line: lineOf(problem.path) }));
  located.sort((a, b) => (a.line ?? Number.MAX_SAFE_INTEGER) - (b.line ?? Number.MAX_SAFE_INTEGER));
  return located.map(({ problem, line }) => `${formatPath(problem.path)}: ${problem.message}${line === undefined ? "" : ` (line ${line})`}`);
}

/** The report for a list of problems: a heading, then one indented line each. */
export function formatProblems(source: string, problems: readonly ConfigProblem[], lineOf?: (path: readonly PropertyKey[]) => number | undefined): string {
  const count = problems.length === 1 ? "1 problem" : `${problems.length} problems`;
  return `invalid configuration in ${source} (${count}):\n${problemLines(problems, lineOf)
    .map((line) => `  ${line}`)
    .join("\n")}`;
}

/**
 * A configuration read and checked: ready for use, or everything wrong with
 * it. Start-up, check-config and reload all get one of these from the same
 * loader, so a file that checks clean starts, and reloads.
 */
export type ConfigLoad =
  | { readonly ok: true; readonly config: Config }
  | {
      readonly ok: false;
      /** One line per problem (see problemLines); YAML and read errors as they are. */
      readonly problems: readonly string[];
      /** What start-up and check-config print. */
      readonly report: string;
    };

/**
 * Validates a configuration object and resolves it for use. `env` supplies
 * API keys; a provider whose key variable is unset fails here, at start-up
 * (or reload), not on its first request. Every problem is reported at once.
 */
export function validateConfig(input: unknown, env: NodeJS.ProcessEnv, source = "configuration", lineOf?: (path: readonly PropertyKey[]) => number | undefined): ConfigLoad {
  const { file, tls, catalog, problems } = checkConfig(input, env);
  if (!file) return { ok: false, problems: problemLines(problems, lineOf), report: formatProblems(source, problems, lineOf) };
  return { ok: true, config: buildConfig(file, tls, env, catalog ?? builtInCatalog()) };
}

/** validateConfig for callers that cannot go on without a configuration: throws ConfigError with the report. */
export function resolveConfig(input: unknown, env: NodeJS.ProcessEnv, source = "configuration", lineOf?: (path: readonly PropertyKey[]) => number | undefined): Config {
  const loaded = validateConfig(input, env, source, lineOf);
  if (!loaded.ok) throw new ConfigError(loaded.report);
  return loaded.config;
}

/** A checked file made ready for use: defaults applied, keys read from `env`, timeouts merged, targets attached. */
/** A budget as the file writes it (USD) in integer micro-dollars, as every store counts it. */
/**
 * A configured team's or business line's id: as written, or its name. The
 * file is the operator's own record of its levels: one written again under
 * an old name continues the old one (its period's spend, its team cache
 * scope) unless it is given a new `id`. Runtime levels get a random id.
 */
export function configuredLevelId(level: { readonly name: string; readonly id?: string | undefined }): string {
  return level.id ?? level.name;
}

export function budgetOf(budget: { readonly usd: number; readonly period: BudgetPeriod }): KeyBudget {
  return { usdMicros: Math.round(budget.usd * 1_000_000), period: budget.period };
}

function buildConfig(file: ConfigFile, tls: TlsCredentials | undefined, env: NodeJS.ProcessEnv, catalog: ModelCatalog): Config {
  const providers = new Map<string, ProviderConfig>();
  for (const [name, p] of Object.entries(file.providers)) {
    // checkConfig has made sure every named key variable is set.
    const apiKeyEnv = p.apiKeyEnv ?? presetOf(p.preset)?.apiKeyEnv;
    const apiKey = apiKeyEnv === undefined ? undefined : createSecret(env[apiKeyEnv]!);
    providers.set(name, {
      name,
      kind: p.kind,
      // The schema has refused a provider without one.
      baseUrl: providerBaseUrl(p)!,
      ...(apiKey ? { apiKey } : {}),
      timeouts: { ...DEFAULT_TIMEOUTS, ...p.timeouts },
      admission: { maxConcurrent: p.maxConcurrent ?? Number.POSITIVE_INFINITY, maxWaiting: p.queue.maxWaiting, timeoutMs: p.queue.timeoutMs, backgroundShare: file.batch.maxShare },
      breaker: p.breaker,
      ...(p.thinking ? { thinking: p.thinking } : {}),
      local: p.local,
      ...(p.azure ? { azure: resolveAzure(p.azure, env) } : {}),
      ...(p.preset ? { preset: p.preset } : {}),
      ...(p.bedrock ? { bedrock: bedrockSettings(p.bedrock, env) } : {}),
      ...(p.vertex ? { vertex: withKeyFileFromEnv(p.vertex, env) } : {}),
    });
  }

  const models = new Map<string, ModelRoute>();
  for (const alias of Object.keys(file.models).sort()) {
    const m = file.models[alias]!;
    const written = m.targets ?? [{ provider: m.provider!, model: m.model!, weight: 1, ...(m.catalog ? { catalog: m.catalog } : {}), ...(m.price ? { price: m.price } : {}), ...(m.capabilities ? { capabilities: m.capabilities } : {}) }];
    const targets = written.map((t): RouteTarget => {
      const provider = providers.get(t.provider)!;
      const thinking = ("thinking" in t ? t.thinking : undefined) ?? provider.thinking;
      // A declared price replaces the entry's whole (docs/model-catalog.md, "Inheritance").
      const entry = lookupModel(catalog, t.model, t.catalog);
      const price = t.price ?? entry?.price;
      return {
        key: `${provider.name}/${t.model}`,
        provider,
        model: t.model,
        weight: t.weight,
        ...(price ? { price: withCacheWriteDefaults(price, provider.kind) } : {}),
        ...(entry ? { catalog: entry.id } : {}),
        timeouts: { ...provider.timeouts, ...m.timeouts, ...("timeouts" in t ? t.timeouts : {}) },
        ...(thinking ? { thinking } : {}),
        local: ("local" in t ? t.local : undefined) ?? provider.local,
        capabilities: { ...entry?.capabilities, ...t.capabilities },
        ...(m.promptCache === "auto" ? { promptCache: "auto" as const } : {}),
      };
    });
    models.set(alias, {
      alias,
      targets,
      strategy: m.strategy,
      retry: {
        maxAttempts: m.retry?.maxAttempts ?? targets.length,
        baseBackoffMs: m.retry?.baseBackoffMs ?? 100,
        maxBackoffMs: m.retry?.maxBackoffMs ?? 2000,
      },
      ...(m.hedge ? { hedge: m.hedge } : {}),
      dropUnsupportedParams: m.dropUnsupportedParams,
      ...(m.hostedTools === "refuse" ? { hostedTools: m.hostedTools } : {}),
      ...(m.pii ? { pii: m.pii } : {}),
      localOnly: m.localOnly,
      context: m.context,
      ...(m.maxToolResultTokens === undefined ? {} : { maxToolResultTokens: m.maxToolResultTokens }),
      ...(m.systemPrompt === undefined ? {} : { systemPrompt: m.systemPrompt }),
      ...(m.record ? { record: m.record } : {}),
      ...(m.shadow ? { shadow: m.shadow } : {}),
      ...(m.cache
        ? {
            cache: {
              ...(m.cache.exact ? { exactTtlMs: m.cache.exact.ttlS * 1000 } : {}),
              ...(m.cache.semantic ? { semantic: { embeddingModel: m.cache.semantic.embeddingModel, threshold: m.cache.semantic.threshold, ttlMs: m.cache.semantic.ttlS * 1000, maxEntries: m.cache.semantic.maxEntries } } : {}),
              scope: m.cache.scope,
              cacheToolCalls: m.cache.cacheToolCalls,
            },
          }
        : {}),
    });
  }

  return {
    server: { ...file.server, tls },
    log: file.log,
    telemetry: {
      serviceName: file.telemetry.serviceName,
      metrics: file.telemetry.metrics,
      tracing: {
        captureContent: file.telemetry.tracing.captureContent,
        ...(file.telemetry.tracing.exporter ? { exporter: file.telemetry.tracing.exporter } : {}),
        ...(file.telemetry.tracing.endpoint ? { endpoint: file.telemetry.tracing.endpoint } : {}),
      },
    },
    limits: {
      maxEventBytes: file.limits.maxEventBytes,
      maxAnswerBytes: file.limits.maxAnswerBytes,
      maxRequestBytes: file.limits.maxRequestBytes ?? file.facade.maxBodyBytes ?? DEFAULT_MAX_REQUEST_BYTES,
      maxRequestElements: file.limits.maxRequestElements,
      maxJsonDepth: file.limits.maxJsonDepth,
    },
    facade: { keepaliveMs: file.facade.keepaliveMs },
    providers,
    models,
    catalog,
    auth: {
      required: file.auth.keys.length > 0 || file.auth.adminKeyEnv !== undefined,
      ...(file.auth.adminKeyEnv === undefined ? {} : { adminKeySha256: sha256Hex(env[file.auth.adminKeyEnv]!) }),
      keys: file.auth.keys.map(
        (k): ConfiguredKey => ({
          name: k.name,
          // checkConfig has made sure the variable is set; only the hash is kept.
          sha256: k.sha256 !== undefined ? k.sha256.toLowerCase() : sha256Hex(env[k.keyEnv!]!),
          ...(k.team === undefined ? {} : { team: k.team }),
          ...(k.models ? { models: k.models } : {}),
          limits: k.limits,
          ...(k.budget ? { budget: budgetOf(k.budget) } : {}),
          ...(k.pii ? { pii: k.pii } : {}),
          ...(k.localOnly ? { localOnly: true } : {}),
          ...(k.mcp ? { mcp: k.mcp } : {}),
        }),
      ),
      teams: new Map(
        file.auth.teams.map((t) => [
          t.name,
          {
            name: t.name,
            id: configuredLevelId(t),
            ...(t.businessLine === undefined ? {} : { businessLine: t.businessLine }),
            limits: t.limits,
            ...(t.budget ? { budget: budgetOf(t.budget) } : {}),
            ...(t.pii ? { pii: t.pii } : {}),
            ...(t.localOnly ? { localOnly: true } : {}),
            ...(t.mcp ? { mcp: t.mcp } : {}),
          },
        ]),
      ),
      tagKeys: new Set(file.auth.tagKeys),
      businessLines: new Map(file.auth.businessLines.map((b) => [b.name, { name: b.name, id: configuredLevelId(b), limits: b.limits, ...(b.budget ? { budget: budgetOf(b.budget) } : {}), ...(b.mcp ? { mcp: b.mcp } : {}) }])),
      budgetExceededStatus: file.auth.budgetExceededStatus,
    },
    ledger: { ...file.ledger, enabled: file.ledger.enabled ?? file.store?.postgres !== undefined },
    batch: file.batch,
    workers: file.workers,
    alerts: {
      thresholds: [...new Set(file.alerts.thresholds)].sort((a, b) => a - b),
      ...(file.alerts.webhook
        ? {
            webhook: {
              url: file.alerts.webhook.url,
              secret: createSecret(env[file.alerts.webhook.secretEnv]!),
              timeoutMs: file.alerts.webhook.timeoutMs,
              maxAttempts: file.alerts.webhook.maxAttempts,
              queueMax: file.alerts.webhook.queueMax,
            },
          }
        : {}),
    },
    ...(file.store ? { store: { ...(file.store.redis ? { redis: file.store.redis } : {}), ...(file.store.postgres ? { postgres: file.store.postgres } : {}) } } : {}),
    resume: file.resume,
    responses: file.responses,
    mcp: file.mcp,
    cache: file.cache,
    compliance: { patterns: file.compliance.patterns, audit: { ...file.compliance.audit, enabled: file.compliance.audit.enabled ?? file.store?.postgres !== undefined } },
    console: {
      access: file.console.access ?? (file.auth.adminKeyEnv === undefined ? "off" : "admin"),
      maxWatchers: file.console.maxWatchers,
    },
  };
}

/** Reads, parses, checks and resolves a YAML configuration file; never throws. */
export async function readConfigFile(path: string, env: NodeJS.ProcessEnv): Promise<ConfigLoad> {
  const doc = await readConfigDocument(path);
  if (doc.errors.length > 0) return { ok: false, problems: doc.errors, report: doc.errors.join("\n") };
  return validateConfig(doc.input, env, path, doc.lineOf);
}

/** readConfigFile for start-up and check-config: throws ConfigError with the report. */
export async function loadConfigFile(path: string, env: NodeJS.ProcessEnv): Promise<Config> {
  const loaded = await readConfigFile(path, env);
  if (!loaded.ok) throw new ConfigError(loaded.report);
  return loaded.config;
}
