import { randomUUID } from "node:crypto";
import type { Meter } from "@opentelemetry/api";
import { createProviderGates, type ProviderGates } from "./admission/provider-gate.js";
import { type AuditLog, createAuditLog } from "./audit/audit-log.js";
import { type AuditTrail, authFailureAudit, budgetAlertAudit, complianceAudit, NO_AUDIT, refusalAudit, reloadDetails } from "./audit/audit-trail.js";
import { type BatchRunner, createBatchRunner } from "./batch/batch-runner.js";
import { type BatchStore, createBatchStore } from "./batch/batch-store.js";
import { createQueuedBatchRunner } from "./batch/queued-runner.js";
import { cachedAliasesOf, createCacheAdmin } from "./cache/cache-admin.js";
import { createMemoryCacheStore } from "./cache/memory-cache-store.js";
import { createRedisCacheStore } from "./cache/redis-cache-store.js";
import { createResponseCache } from "./cache/response-cache.js";
import { createSemanticStore } from "./cache/semantic-store.js";
import { type CallLayer, createCallLayer } from "./call/call-layer.js";
import type { GatewayToolsDeps } from "./call/gateway-tool-loop.js";
import { keptLocalNames } from "./compliance/pii-policy.js";
import type { Config } from "./config/config.js";
import { type ConfigSource, createLiveConfig, type LiveConfig } from "./config/live-config.js";
import { defaultConsoleDir, loadConsoleAssets } from "./console/console-assets.js";
import { type Closers, createClosers } from "./core/closers.js";
import { GatewayError } from "./core/errors.js";
import type { StructureLimits } from "./core/structure-limits.js";
import { systemTimers, type Timers } from "./core/timers.js";
import { createDatabaseHandle } from "./db/open-database.js";
import { createStatsWatch, type StatsWatch } from "./edges/grpc/watch-stats.js";
import { createMcpEdge } from "./edges/mcp/mcp-edge.js";
import { createBatchLineExecutor } from "./edges/openai/batch-lines.js";
import { createBackgroundRuns } from "./edges/responses/background-runs.js";
import type { PriceOf } from "./evaluation/answer-call.js";
import { createEvaluations, type Evaluations, type EvaluationsOptions } from "./evaluation/evaluations.js";
import { byEndpoint, createReplayLineExecutor } from "./evaluation/replay-lines.js";
import { createShadowRunner, type ShadowRunner } from "./evaluation/shadow.js";
import type { TenancyObserver } from "./flow/observer.js";
import { holdReadinessForDatabase } from "./health/database-readiness.js";
import { createHealthState } from "./health/health-state.js";
import { createLedger, type Ledger } from "./ledger/ledger.js";
import { createSpendReports } from "./ledger/spend-reports.js";
import { createLogger, type Logger } from "./logging/logger.js";
import { createToolAccounting } from "./mcp/accounting/tool-accounting.js";
import { mcpCallerFor } from "./mcp/caller.js";
import type { McpToolbox, ToolAccounting } from "./mcp/contract.js";
import type { McpCredentials } from "./mcp/credentials/mcp-credentials.js";
import { openMcpCredentials } from "./mcp/credentials/open-mcp-credentials.js";
import { ledgerToolCalls } from "./mcp/ledger-tool-calls.js";
import { createRecentToolCalls, type RecentToolCalls } from "./mcp/recent-calls.js";
import { reportMcpHealth } from "./mcp/upstream/readiness-details.js";
import { type ChatPipeline, createChatPipeline } from "./pipeline/chat-pipeline.js";
import { createEmbedPipeline } from "./pipeline/embed-pipeline.js";
import { reportCuts } from "./pipeline/stream-cut.js";
import { createStreamRegistry, type StreamRegistry } from "./pipeline/stream-registry.js";
import { createProviderKeys } from "./provider-keys/provider-keys.js";
import { createRecorder, type Recorder } from "./recording/recorder.js";
import { createBreakers } from "./resilience/circuit-breaker.js";
import { startConversationSweep } from "./response-state/conversation-sweep.js";
import { createMemoryConversationStore } from "./response-state/memory-conversation-store.js";
import { createMemoryResponseStore } from "./response-state/memory-response-store.js";
import { createPgConversationStore } from "./response-state/pg-conversation-store.js";
import { createPgResponseStore } from "./response-state/pg-response-store.js";
import type { ResponseState } from "./response-state/response-state.js";
import { startResponseSweep } from "./response-state/response-sweep.js";
import { createResponsesAdmin } from "./response-state/responses-admin.js";
import { openResumableStreams } from "./resume/open-stream-log.js";
import type { ResumableStreams } from "./resume/resumable-streams.js";
import { createRoutes } from "./routes.js";
import { createTargetOrder } from "./routing/strategies.js";
import { createTargetStats } from "./routing/target-stats.js";
import { effectiveMaxConnections, loweredCeilingLevel, openFileLimit } from "./server/fd-limit.js";
import { type GatewayServer, startGatewayServer } from "./server/gateway-server.js";
import { startMetricsListener } from "./server/metrics-route.js";
import { createTenantKeyStats } from "./stats/key-stats.js";
import { createLiveStats, type LiveStats } from "./stats/live-stats.js";
import { createMemoryReplayStore, DEFAULT_REPLAY_STORE } from "./store/memory-replay-store.js";
import { createQueueClient } from "./store/redis-connection.js";
import { createRedisReplayStore, DEFAULT_MAX_REPLAY_ENTRY_BYTES } from "./store/redis-replay-store.js";
import type { ReplayStore } from "./store/replay-store.js";
import { overheadHistogram } from "./telemetry/overhead-metric.js";
import { createTelemetry, type Telemetry, type TelemetryOptions } from "./telemetry/telemetry.js";
import { bothTenancyObservers } from "./telemetry/tenancy-metrics.js";
import { createTenancy, replicaName, type Tenancy } from "./tenancy/tenancy.js";
import { unpricedBudgets } from "./tenancy/unpriced-budgets.js";
import { createUpstreamClient, type UpstreamClient } from "./upstream/http-client.js";
import { withProviderKeys } from "./upstream/provider-key-client.js";
import { observePool } from "./workers/pool-metrics.js";
import { installTaskPool } from "./workers/shared-pool.js";
import { createTaskPool, defaultPoolSize } from "./workers/task-pool.js";

export interface SluiceOptions {
  /** The configuration to start with. */
  readonly config: Config;
  /** Where a reload reads the configuration again; absent for one with no file (the built-in default). */
  readonly source?: ConfigSource;
  /** Defaults to a JSON logger at the configured level on stdout. */
  readonly logger?: Logger;
  /** The clock breakers read (performance.now() by default); tests move it instead of sleeping. */
  readonly clock?: () => number;
  /** The random source of routing (weighted exploration, backoff jitter); tests pin it. */
  readonly random?: () => number;
  /** Overrides config.server (tests bind port 0). */
  readonly host?: string;
  readonly port?: number;
  /** The environment the OTEL_* variables are read from (default process.env). */
  readonly env?: NodeJS.ProcessEnv;
  /** Tests: spans and metrics to in-memory exporters. */
  readonly telemetry?: Pick<TelemetryOptions, "spanExporter" | "metricReaders">;
  /** What tenancy reports, beside the metrics (tests listen). */
  readonly tenancyObserver?: TenancyObserver;
  /** Tests only: the tenant store's clock (epoch ms), for minute windows and budget periods. */
  readonly storeClock?: () => number;
  /** The live statistics' clock and WatchStats' timers; tests move time instead of sleeping. */
  readonly timers?: Timers;
  /** The tenancy heartbeat's clock and timer (stream leases); tests move time instead of sleeping. */
  readonly leaseTimers?: Timers;
  /** Where the built console is (default: dist/console of this package). */
  readonly consoleDir?: string;
  /** Tests: the upstream client (e.g. over the in-process simulator) instead of undici's connection pools. */
  readonly upstream?: UpstreamClient;
}

export interface Sluice {
  /** The running configuration: `reload()` on SIGHUP (and file changes, with server.watchConfig). */
  readonly config: LiveConfig;
  readonly server: GatewayServer;
  /** WatchStats streams, when served. */
  readonly statsWatch?: StatsWatch;
  /** The providers' admission queues (their depth is observable). */
  readonly gates: ProviderGates;
  readonly pipeline: ChatPipeline;
  readonly registry: StreamRegistry;
  readonly logger: Logger;
  readonly telemetry: Telemetry;
  /** The console's live numbers (what WatchStats sends); absent when WatchStats is not served. */
  readonly liveStats?: LiveStats;
  /** Where /metrics is served when it has a listener of its own. */
  readonly metricsUrl?: string;
  /** Keys, limits, budgets and usage records. */
  readonly tenancy: Tenancy;
  /** The spend ledger, when it is on (ledger.enabled). */
  readonly ledger?: Ledger;
  /** Per-key MCP access tokens, when a server has auth.mode per-key: the toolbox asks credentialFor for each call's bearer. */
  readonly mcpCredentials?: McpCredentials;
  /** The last MCP tool calls of this replica, for the console (fed by wrapping the toolbox's accounting with withRecentCalls). */
  readonly mcpRecentCalls: RecentToolCalls;
  /** The audit log, when compliance.audit is on. */
  readonly audit?: AuditLog;
  /** MCP tool calls' limits, budgets, ledger records, audit events, metrics and spans (mcp/accounting/), for the MCP toolbox. */
  readonly toolAccounting: ToolAccounting;
  /** Resumable streams and their store. */
  readonly resumable: ResumableStreams;
  /** Stored responses (absent when responses.store is false). */
  readonly responseState?: ResponseState;
  /** The OpenAI Batch API's in-process queue (`settled(id)`: a batch is finished here). */
  readonly batches: BatchRunner;
  /** Calls kept for evaluation replay (flush: tests, before a dataset is made). */
  readonly recorder: Recorder;
  readonly evaluations: Evaluations;
  readonly shadow: ShadowRunner;
  /**
   * Graceful shutdown: readiness turns unhealthy, no new streams are
   * accepted, in-flight streams get `drainMs` to finish, then the rest are
   * ended with UNAVAILABLE and their upstream requests aborted.
   */
  shutdown(drainMs?: number): Promise<{ readonly drained: boolean; readonly aborted: number }>;
  /** Immediate close: every connection is destroyed. */
  close(): Promise<void>;
}

/** The model-call tool loop's view of the configuration in force: the servers it may call, and a key's levels for the grants. */
function gatewayToolsDeps(toolbox: () => McpToolbox | undefined, live: LiveConfig, tenancy: Pick<Tenancy, "chargeDeps">): GatewayToolsDeps {
  return {
    toolbox,
    servers: () => Object.keys(live.current().mcp.servers),
    caller: (principal) => mcpCallerFor(principal, tenancy.chargeDeps().hierarchy),
  };
}

/** Time for ended streams to write their final status before sockets are destroyed. */
const FINAL_WRITE_GRACE_MS = 1_000;
/** Longest one audit append may hold a database connection (statement_timeout). */
const AUDIT_WRITE_TIMEOUT_MS = 5_000;
/** How often a replica reads the provider keys others stored or rotated: a bounded poll, which PGlite and every PostgreSQL serve alike. */
const PROVIDER_KEY_POLL_MS = 2_000;
/** Longest one part may take to close before the next one's turn: past any part's own grace (an OTLP export's 10 s). */
const CLOSE_BOUND_MS = 15_000;

/**
 * Wires configuration, upstream client, pipeline and server into a running
 * gateway. Each part's closer goes on one stack as the part starts; shutdown,
 * close and a start that fails halfway (a port in use) all close that stack.
 */
export async function startSluice(options: SluiceOptions): Promise<Sluice> {
  const logger = options.logger ?? createLogger(options.config.log.level);
  const closers = createClosers({
    boundMs: CLOSE_BOUND_MS,
    onError: (part, error) => logger.error({ event: "server.close_failed", part, cause: error instanceof Error ? error.message : "unknown" }),
  });
  try {
    return await startParts(options, logger, closers);
  } catch (error) {
    await closers.close();
    throw error;
  }
}

async function startParts(options: SluiceOptions, logger: Logger, closers: Closers): Promise<Sluice> {
  const { config } = options;
  const client = options.upstream ?? createUpstreamClient();
  closers.push("upstream client", () => client.close());
  const registry = createStreamRegistry();
  const gates = createProviderGates();
  const stats = createTargetStats();
  const breakers = createBreakers(options.clock, (key, state) => logger.warn({ event: "breaker.changed", target: key, state }));
  // Gates and breakers live as long as the process and take each new
  // configuration's provider settings (live.onChange below); requests read
  // the rest from live.current() when they start.
  gates.configure(config.providers);
  breakers.configure(config.providers);
  const random = options.random ?? Math.random;
  const order = createTargetOrder({ stats, random });
  const BREAKER_STATE = { closed: 0, half_open: 1, open: 2 } as const;
  const queues = () => [...gates.all()].map(([provider, gate]) => ({ provider, waiting: gate.waiting, inFlight: gate.inFlight }));
  const timers = options.timers ?? systemTimers;
  // Open: anyone who can reach the port may watch, as they may read /metrics. Otherwise the admin key, when there is one.
  // Nobody can watch otherwise, and then streams do not feed the statistics at all.
  const watchable = config.console.access === "open" || config.auth.adminKeySha256 !== undefined;
  /** The aliases routing to a target now: the console names a breaker by them, not by its upstream model string. */
  const aliasesOf = (target: string) => [...live.current().models.values()].filter((route) => route.targets.some((t) => t.key === target)).map((route) => route.alias);
  const liveStats = watchable
    ? createLiveStats({
        timers,
        sources: { activeStreams: () => registry.active, queues, breakers: () => [...breakers.states()].map(([target, state]) => ({ target, state, aliases: aliasesOf(target) })) },
      })
    : undefined;
  const telemetry = createTelemetry({
    ...(liveStats ? { live: liveStats } : {}),
    config: config.telemetry,
    env: options.env ?? process.env,
    logger,
    ...options.telemetry,
    sources: {
      activeStreams: () => registry.active,
      queues,
      breakers: () => [...breakers.states()].map(([target, state]) => ({ target, state: BREAKER_STATE[state] })),
      connections: () => [...client.stats()].map(([provider, pool]) => ({ provider, ...pool })),
    },
  });
  closers.push("telemetry", () => telemetry.shutdown());
  if (config.workers.enabled) {
    const { size, maxQueued, timeoutMs } = config.workers;
    const pool = createTaskPool({ size: size ?? defaultPoolSize(), maxQueued, timeoutMs });
    const uninstall = installTaskPool(pool);
    if (telemetry.metrics) observePool(telemetry.metrics.meter, pool);
    closers.push("worker pool", async () => {
      uninstall();
      await pool.close();
    });
  }
  const live = createLiveConfig({
    initial: config,
    logger,
    ...(options.source ? { source: options.source } : {}),
    onOutcome: (result) => telemetry.metrics?.instruments.configReloads.add(1, { result }),
  });
  telemetry.metrics?.knowProviders(config.providers.keys());
  live.onChange((next, previous) => {
    telemetry.metrics?.knowProviders(next.providers.keys());
    gates.configure(next.providers);
    breakers.configure(next.providers);
    if (next.log.level !== previous.log.level) logger.level = next.log.level;
  });
  // The ledger hears settled records (without Redis it writes them itself); it is made once the store is.
  let ledgerObserver: TenancyObserver = {};
  // The audit log hears authentication failures and refusals; it too is made once the store is.
  let auditObserver: TenancyObserver = {};
  const toLedger: TenancyObserver = {
    usageRecorded: (event) => ledgerObserver.usageRecorded?.(event),
    tenantRefused: (event) => {
      ledgerObserver.tenantRefused?.(event);
      auditObserver.tenantRefused?.(event);
    },
    authenticated: (event) => auditObserver.authenticated?.(event),
    budgetAlert: (event) => auditObserver.budgetAlert?.(event),
  };
  // The database opens behind the port, when a feature first needs it: until then the semantic cache is empty.
  const database = createDatabaseHandle(config.store?.postgres, logger);
  const openedDatabase = () => {
    const db = database.current();
    if (!db) void database.open().catch(() => undefined);
    return db;
  };
  closers.push("database", () => database.close());
  const replica = replicaName();
  // Keys and limits are read from live.current() per request: a reload applies from the next request on.
  const tenancy = createTenancy({
    config: live.current,
    replica,
    logger,
    observer: bothTenancyObservers(bothTenancyObservers(telemetry.tenancy, toLedger), options.tenancyObserver),
    ...(options.storeClock ? { storeClock: options.storeClock } : {}),
    ...(options.leaseTimers ? { timers: options.leaseTimers } : {}),
  });
  const mcpCredentials = openMcpCredentials({
    settings: () => live.current().mcp,
    env: options.env ?? process.env,
    ...(tenancy.redis ? { redis: tenancy.redis } : {}),
    keyExists: async (id) => (await tenancy.admin.list()).some((key) => key.id === id),
    now: options.storeClock ?? Date.now,
  });
  // The console's recent MCP calls (this replica's): the toolbox's accounting is wrapped with withRecentCalls to fill it.
  const mcpRecentCalls = createRecentToolCalls();
  const ledger = config.ledger.enabled
    ? createLedger({
        settings: config.ledger,
        ...(tenancy.redis ? { redis: tenancy.redis } : {}),
        database: () => database.open(),
        replica,
        logger,
        ...(telemetry.metrics ? { meter: telemetry.metrics.meter } : {}),
      })
    : undefined;
  if (ledger) ledgerObserver = ledger.observer;
  const auditLog = config.compliance.audit.enabled
    ? createAuditLog({
        database: () => database.open(),
        ...(tenancy.redis ? { redis: tenancy.redis } : {}),
        settings: { maxBuffered: config.compliance.audit.bufferMax, flushMs: config.compliance.audit.flushMs, batchSize: config.compliance.audit.batchSize, timeoutMs: AUDIT_WRITE_TIMEOUT_MS },
        replica,
        logger,
        ...(telemetry.metrics ? { meter: telemetry.metrics.meter } : {}),
      })
    : undefined;
  // With Redis the ledger drains the usage stream over the store's connection: it stops first, and what it leaves
  // stays in the stream for the other replicas. Without, it writes this replica's last records after the last settle.
  closers.push("tenancy, ledger and audit log", async () => {
    if (tenancy.redis) await Promise.all([ledger?.close(FINAL_WRITE_GRACE_MS), auditLog?.close(FINAL_WRITE_GRACE_MS)]);
    await tenancy.close();
    if (!tenancy.redis) await Promise.all([ledger?.close(2 * FINAL_WRITE_GRACE_MS), auditLog?.close(2 * FINAL_WRITE_GRACE_MS)]);
  });
  const trail: AuditTrail = auditLog ?? NO_AUDIT;
  if (auditLog) {
    auditObserver = {
      authenticated: authFailureAudit(trail, config.compliance.audit.authFailuresPerMinute),
      tenantRefused: refusalAudit(trail, config.compliance.audit.refusalsPerMinute),
      budgetAlert: budgetAlertAudit(trail, replica),
    };
    live.onChange((next, previous) => trail.record({ actor: { kind: "system", id: replica }, action: "config.reload", outcome: "ok", details: reloadDetails(previous, next) }));
  }
  // MCP tool calls' bookkeeping (mcp/accounting/): the same limits, budgets, ledger path and audit trail as model calls.
  // The toolbox (mcp/toolbox.ts) is built with it; its lease is renewed as long as the server's longest call.
  const toolAccounting = createToolAccounting({
    tenancy,
    trail,
    logger,
    tracer: telemetry.tracing.tracer,
    ...(telemetry.metrics ? { meter: telemetry.metrics.meter } : {}),
    longestCallMs: (server) => 2 * (live.current().mcp.servers[server]?.maxTotalTimeoutMs ?? 600_000),
  });
  const cache = createResponseCache({
    // Shared by the replicas on one Redis; otherwise this process's memory, bounded.
    store: tenancy.redis
      ? createRedisCacheStore({ ...tenancy.redis, maxBytes: config.cache.redisMaxBytes, maxGroupBytes: config.cache.aliasMaxBytes })
      : createMemoryCacheStore({ maxBytes: config.cache.maxMemoryBytes, maxGroupBytes: config.cache.aliasMaxBytes }),
    semantic: {
      store: createSemanticStore(openedDatabase),
      // As the caller: its key's allowlist, limits and budget apply to the embedding too.
      embed: async (question, model, principal, requestId, signal) => (await embeddings.embed({ model, inputs: [question] }, { requestId, edge: "cache", signal, ...(principal ? { principal } : {}) })).vectors[0]!,
    },
    settings: config.cache,
    logger,
    ...(telemetry.metrics ? { instruments: telemetry.metrics.instruments } : {}),
  });
  // Recordings for evaluation replay go to the database in batches; it opens with the first one kept.
  // Shadow runs need the call layer, made from the pipeline the recorder is part of: bound once both exist.
  let shadow: ShadowRunner | undefined;
  const recorder = createRecorder({
    database: () => database.open(),
    logger,
    shadow: (settings, plan, live) => shadow?.start(settings, plan, live),
    ...(telemetry.metrics ? { meter: telemetry.metrics.meter } : {}),
  });
  closers.push("recorder", () => recorder.close(FINAL_WRITE_GRACE_MS));
  // Provider API keys set by the admin API (docs/providers.md, "Provider credentials at run time"): sealed in store.postgres
  // under mcp.credentialsKeyEnv's secret, read by every replica on a poll, put into requests by the upstream client.
  const credentialsKeyEnv = config.mcp.credentialsKeyEnv;
  const providerKeysMaster = credentialsKeyEnv === undefined ? undefined : (options.env ?? process.env)[credentialsKeyEnv];
  const providerKeys = createProviderKeys({
    ...(config.store?.postgres ? { database: () => database.open() } : {}),
    ...(providerKeysMaster ? { master: providerKeysMaster } : {}),
    provider: (name) => live.current().providers.get(name),
    logger,
    trail,
    replica,
    pollMs: PROVIDER_KEY_POLL_MS,
  });
  closers.push("provider keys", () => providerKeys.close());
  const keyedClient = withProviderKeys(client, providerKeys, (name) => live.current().providers.get(name)?.kind);
  const onCut = reportCuts({ logger, trail, ...(telemetry.metrics ? { counter: telemetry.metrics.instruments.streamCuts } : {}) });
  const stages = { config: live.current, client: keyedClient, telemetry, registry, gates, breakers, stats, order, random, tenancy, cache, logger, recorder, onCut, ...(auditLog ? { onCompliance: complianceAudit(trail) } : {}) };
  const pipeline = createChatPipeline(stages);
  const embeddings = createEmbedPipeline(stages);
  // Settings are read at start: the store's connections and the running streams' bounds stay as they started.
  const resumable = openResumableStreams(config.resume, logger, tenancy.redis);
  // Before tenancy's: the stream log borrows its Redis connection.
  closers.push("resumable streams", () => resumable.close());
  const maxConnections = connectionCeiling(config, logger);
  warnUnpricedBudgets(config, logger);
  const health = createHealthState();
  const semanticCached = [...config.models.values()].some((route) => route.cache?.semantic);
  const databaseReadiness =
    config.store?.postgres || ledger || auditLog || semanticCached
      ? holdReadinessForDatabase(
          health,
          () => database.open(),
          (error, retryInMs) => logger.warn({ event: "server.readiness_waits", waitingFor: "database", error: error instanceof Error ? error.message : String(error), retryInMs }),
        )
      : undefined;
  // A store Redis refuses for good (a wrong topology, prefix or ACL) fails start; found later, it holds readiness (below).
  await tenancy.checkAtStart();
  const followRejected = () => {
    const rejected = Object.keys(tenancy.rejected).length > 0;
    health.hold("store_rejected", rejected);
    health.detail("store", rejected ? () => ({ rejected: tenancy.rejected }) : undefined);
  };
  followRejected();
  const stopFollowingRejected = tenancy.onRejectedChange(followRejected);
  // A fail-closed store that is not connected would refuse every keyed request: not ready until it is.
  if (!tenancy.ready) health.hold("store", true);
  const stopFollowingStore = tenancy.onReadyChange((storeReady) => {
    health.hold("store", !storeReady);
    logger.info({ event: "server.readiness", ready: health.ready, waitingFor: health.waitingFor });
  });
  const statsWatch = liveStats
    ? createStatsWatch({
        live: liveStats,
        keys: createTenantKeyStats({ store: tenancy.store, configured: () => live.current().auth.keys, timers }),
        caches: () => cache.tallies(cachedAliasesOf(live.current())),
        timers,
        logger,
        maxWatchers: config.console.maxWatchers,
        authorize: config.console.access === "open" ? () => undefined : (header) => tenancy.admin.authorize(header),
      })
    : undefined;
  // The toolbox the model-call tool loop uses: the `/mcp` edge's, made below (it needs the call layer).
  let mcpToolbox: McpToolbox | undefined;
  const calls = createCallLayer({
    pipeline,
    embeddings,
    tenancy,
    resumable,
    replayStore: tenancy.redis ? sharedReplayStore(tenancy.redis) : createMemoryReplayStore(),
    maxAnswerBytes: () => live.current().limits.maxAnswerBytes,
    ...(telemetry.metrics ? { onOverhead: overheadHistogram(telemetry.metrics.instruments.overhead) } : {}),
    gatewayTools: gatewayToolsDeps(() => mcpToolbox, live, tenancy),
  });
  const limits = { ...config.limits, requestTimeoutMs: config.server.requestTimeoutMs };
  // Batches need the database: the first batch call opens it (the embedded in-memory PGlite without store.postgres).
  const batchStore = createBatchStore(() => database.open());
  /** What replays and shadow calls need of the configuration in force: a target's price, a configured key by name. */
  const priceOf: PriceOf = (alias, target) =>
    live
      .current()
      .models.get(alias)
      ?.targets.find((t) => t.key === target)?.price;
  const configuredKeySha256 = (name: string) => live.current().auth.keys.find((k) => k.name === name)?.sha256;
  const batches = startBatches({ config, calls, tenancy, batchStore, priceOf, limits, logger, meter: telemetry.metrics?.meter });
  // Shutdown starts closing batches before the drain (their lines get the same drain as any stream); the stack waits for that close.
  let batchesClosing: Promise<void> | undefined;
  const closeBatches = (graceMs?: number) => (batchesClosing ??= batches.close(graceMs));
  closers.push("batches", () => closeBatches());
  shadow = createShadowRunner({
    calls,
    database: () => database.open(),
    principalOf: (name) => {
      const sha256 = configuredKeySha256(name);
      return sha256 === undefined ? undefined : tenancy.keyByHash(sha256);
    },
    priceOf,
    logger,
    ...(telemetry.metrics ? { meter: telemetry.metrics.meter } : {}),
  });
  closers.push("shadow", () => shadow?.close());
  const evaluations = createEvaluations({
    database: () => database.open(),
    batches: batchStore,
    runner: batches,
    hasAlias: (alias) => live.current().models.has(alias),
    keySha256: configuredKeySha256,
    keysConfigured: () => live.current().auth.keys.length > 0,
    maxLines: () => live.current().batch.maxLines,
    keptLocal: () => keptLocalNames(live.current()),
    embed: embedAsOwner(calls, tenancy),
  });
  // Stored responses (docs/responses.md): in the database when store.postgres is configured (opened by the first one stored or
  // read), else in memory, where the embedded in-memory database would keep them too; the quota reloads live.
  const maxStoredBytes = () => live.current().responses.maxStoredPerKey;
  const responseStore = config.store?.postgres ? createPgResponseStore({ database: () => database.open(), maxStoredBytes }) : createMemoryResponseStore({ maxStoredBytes, maxTotalBytes: config.responses.maxMemoryBytes });
  if (config.responses.store) {
    const stopSweep = startResponseSweep({ store: responseStore, intervalMs: config.responses.sweepIntervalMs, ready: () => !config.store?.postgres || database.current() !== undefined, logger });
    closers.push("stored responses sweep", stopSweep);
  }
  // Conversations (docs/responses.md, "Conversations"): where stored responses are, in the database or in memory.
  const conversations = config.responses.store ? (config.store?.postgres ? createPgConversationStore(() => database.open()) : createMemoryConversationStore({ maxTotalBytes: config.responses.maxMemoryBytes })) : undefined;
  if (conversations)
    closers.push(
      "conversation sweep",
      startConversationSweep(() => (!config.store?.postgres || database.current() ? conversations.sweep() : undefined), config.responses.sweepIntervalMs, logger),
    );
  const responseState: ResponseState | undefined = config.responses.store ? { store: responseStore, settings: () => live.current().responses, logger, ...(conversations ? { conversations } : {}) } : undefined;
  // Background runs end (failed: shut down) before the resumable streams they write through close.
  const responseRuns = responseState
    ? createBackgroundRuns({ calls, streams: resumable, state: responseState, onStoreError: (error) => logger.warn({ event: "responses.background_store_error", cause: error instanceof Error ? error.message.slice(0, 200) : "unknown" }) })
    : undefined;
  if (responseRuns) closers.push("background responses", () => responseRuns.close());
  let server: GatewayServer | undefined;
  // The MCP gateway (edges/mcp/), when servers are configured: its upstream connections start now.
  const mcp =
    Object.keys(config.mcp.servers).length > 0
      ? await createMcpEdge({
          config: live.current,
          calls,
          tenancy,
          accounting: toolAccounting,
          logger,
          limits,
          draining: () => health.draining,
          env: options.env ?? process.env,
          ...(mcpCredentials ? { credentialFor: mcpCredentials.credentialFor } : {}),
          recent: mcpRecentCalls,
        })
      : undefined;
  if (mcp) {
    const stopReporting = reportMcpHealth(health, mcp.upstreams);
    closers.push("mcp upstreams", async () => {
      stopReporting();
      await mcp.close();
    });
  }
  mcpToolbox = mcp?.toolbox;
  const route = createRoutes({
    calls,
    ...(mcp ? { mcp: mcp.route } : {}),
    health,
    limits,
    sendTimeoutMs: config.server.sendTimeoutMs,
    sseKeepaliveMs: config.facade.keepaliveMs,
    batches: { store: batchStore, runner: batches, settings: config.batch },
    ...(responseState ? { responseState } : {}),
    ...(responseRuns ? { responseRuns } : {}),
    responsesSocket: {
      websocket: {
        enabled: config.responses.websocket,
        idleMs: config.responses.websocketIdleMs,
        maxBufferedBytes: config.responses.websocketMaxBufferedBytes,
        maxStateBytes: config.responses.websocketMaxStateBytes,
      },
      logger,
    },
    ...(config.auth.adminKeySha256 !== undefined
      ? {
          admin: tenancy.admin,
          ...(mcpCredentials ? { mcpCredentials } : {}),
          providerKeys,
          mcpOverview: { settings: () => live.current().mcp, recent: mcpRecentCalls, upstreams: () => mcp?.upstreams, ...(ledger ? { ledger: ledgerToolCalls(() => database.open()) } : {}) },
          cacheAdmin: createCacheAdmin(cache, live.current, tenancy.keyIdsNamed),
          ...(config.responses.store
            ? {
                responsesAdmin: createResponsesAdmin({
                  store: responseStore,
                  ...(conversations ? { conversations } : {}),
                  keyIdsNamed: tenancy.keyIdsNamed,
                  keyNames: async () => new Map((await tenancy.admin.list()).map((k) => [k.id, k.name])),
                }),
              }
            : {}),
          reports: createSpendReports({ ...(ledger ? { database: () => database.open() } : {}), tagKeys: () => live.current().auth.tagKeys, thresholds: () => live.current().alerts.thresholds }),
          audit: { ...(auditLog ? { log: auditLog } : {}), trail, authFailed: (event) => auditObserver.authenticated?.(event) },
          evaluations,
          shadow,
          keyName: (sha256: string) => tenancy.keyByHash(sha256)?.name,
        }
      : {}),
    ...(statsWatch ? { watch: statsWatch } : {}),
    console: { access: config.console.access, assets: config.console.access === "off" ? new Map() : loadConsoleAssets(options.consoleDir ?? defaultConsoleDir()) },
    ...(telemetry.metrics && config.telemetry.metrics.port === undefined ? { metrics: telemetry.metrics } : {}),
    ...(config.server.debugEndpoints ? { debug: { registry, reloads: live.counts, connections: () => server?.connections } } : {}),
  });
  server = await startGatewayServer({
    route,
    health,
    logger,
    host: options.host ?? config.server.host,
    port: options.port ?? config.server.port,
    keepaliveMs: config.server.keepaliveMs,
    connections: { headersTimeoutMs: config.server.headersTimeoutMs, idleTimeoutMs: config.server.idleTimeoutMs, maxConnections },
    maxStreamsPerConnection: config.server.maxStreamsPerConnection,
    tracing: telemetry.tracing,
    ...(config.server.tls ? { tls: config.server.tls } : {}),
  });
  // The store's start check waits for its connection, so a store that connected has no change left to log: say where readiness starts.
  if (config.store?.redis) logger.info({ event: "server.readiness", ready: health.ready, waitingFor: health.waitingFor });
  /** Shutdown's: ended streams' time to write their final status. A plain close destroys every connection at once. */
  let serverGraceMs: number | undefined;
  closers.push("server", async () => {
    stopFollowingStore();
    stopFollowingRejected();
    databaseReadiness?.stop();
    statsWatch?.close();
    await server?.close(serverGraceMs);
  });

  const metricsListener = telemetry.metrics && config.telemetry.metrics.port !== undefined ? await startMetricsListener(telemetry.metrics, config.telemetry.metrics.host, config.telemetry.metrics.port) : undefined;
  if (metricsListener) {
    closers.push("metrics listener", () => metricsListener.close());
    logger.info({ event: "metrics.listening", url: `${metricsListener.url}/metrics` });
  }
  if (semanticCached) openedDatabase();
  databaseReadiness?.start();
  ledger?.start();
  auditLog?.start();
  // Stored provider keys are read before the gateway says it is ready, so a restart never serves a moment on the old key.
  if (config.store?.postgres && providerKeysMaster) {
    health.hold("provider_keys", true);
    providerKeys.start(() => health.hold("provider_keys", false));
  }
  // Batches a previous process left unfinished go on; an in-memory database has none to resume.
  if (config.store?.postgres) void batches.resume().catch((error: unknown) => logger.warn({ event: "batch.resume_failed", error: error instanceof Error ? error.message : "unknown" }));

  return {
    config: live,
    server,
    ...(statsWatch ? { statsWatch } : {}),
    telemetry,
    ...(liveStats ? { liveStats } : {}),
    ...(metricsListener ? { metricsUrl: `${metricsListener.url}/metrics` } : {}),
    gates,
    pipeline,
    registry,
    logger,
    tenancy,
    ...(ledger ? { ledger } : {}),
    ...(mcpCredentials ? { mcpCredentials } : {}),
    mcpRecentCalls,
    ...(auditLog ? { audit: auditLog } : {}),
    toolAccounting,
    resumable,
    ...(responseState ? { responseState } : {}),
    batches,
    recorder,
    evaluations,
    shadow,
    async shutdown(drainMs = live.current().server.drainMs) {
      // Batch lines running now get the same drain as any stream (their results are written); no new line starts.
      const batchesClosed = closeBatches(drainMs);
      registry.startDraining();
      gates.close(new GatewayError("shutting_down", "the gateway is shutting down; retry on another instance"));
      server.stopAccepting();
      const inFlight = registry.active;
      logger.info({ event: "server.draining", streams: inFlight, drainMs });
      const drained = await registry.idle(drainMs);
      await batchesClosed;
      const aborted = registry.active;
      if (!drained) {
        registry.abortAll(new GatewayError("shutting_down", "the gateway is shutting down; retry on another instance"));
        await registry.idle(FINAL_WRITE_GRACE_MS);
      }
      // Every stream has ended: their usage goes to the store before its connection closes.
      serverGraceMs = FINAL_WRITE_GRACE_MS;
      await closers.close();
      logger.info({ event: "server.stopped", drained, aborted });
      return { drained, aborted };
    },
    close: () => closers.close(),
  };
}

/** With a shared store, a facade caller's next tool turn may reach any replica and still find its signatures. */
function sharedReplayStore(redis: NonNullable<Tenancy["redis"]>): ReplayStore {
  return createRedisReplayStore({
    ...redis,
    ttlMs: DEFAULT_REPLAY_STORE.ttlMs,
    maxEntryBytes: DEFAULT_MAX_REPLAY_ENTRY_BYTES,
    local: createMemoryReplayStore(),
  });
}

/** The connection ceiling in force: config.server.maxConnections, lowered (and said so) when the open-file limit cannot hold it. */
function connectionCeiling(config: Config, logger: Logger): number {
  const maxConnections = effectiveMaxConnections(config.server.maxConnections);
  if (maxConnections < config.server.maxConnections) {
    logger[loweredCeilingLevel(config.server.maxConnections, maxConnections)]({
      event: "server.max_connections_lowered",
      configured: config.server.maxConnections,
      effective: maxConnections,
      openFileLimit: openFileLimit(),
    });
  }
  return maxConnections;
}

/** A budget no price can spend from is never reached: said once at start, per key. */
function warnUnpricedBudgets(config: Config, logger: Logger): void {
  for (const u of unpricedBudgets(config)) {
    logger.warn({ event: "config.unpriced_budget", key: u.key, budgets: u.budgets, aliases: u.aliases.map((a) => a.alias), targets: [...new Set(u.aliases.flatMap((a) => a.targets))] });
  }
}

interface BatchesOptions {
  readonly config: Config;
  readonly calls: CallLayer;
  readonly tenancy: Tenancy;
  readonly batchStore: BatchStore;
  readonly priceOf: PriceOf;
  readonly limits: StructureLimits;
  readonly logger: Logger;
  readonly meter: Meter | undefined;
}

/** The Batch API's runner, which also runs evaluation replays: its lines go through the call layer as their key. */
function startBatches(options: BatchesOptions): BatchRunner {
  const { config, calls, tenancy, priceOf, limits, logger } = options;
  const batchRunner = {
    store: options.batchStore,
    executor: byEndpoint(createReplayLineExecutor({ calls, principalOf: (sha256) => tenancy.keyByHash(sha256), priceOf }), createBatchLineExecutor({ calls, limits, principalOf: (sha256) => tenancy.keyByHash(sha256), logger })),
    concurrency: config.batch.concurrency,
    logger,
    ...(options.meter ? { meter: options.meter } : {}),
  };
  // Replicas share batches when they share both the database (the lines) and Redis (the queue); otherwise each runs its own.
  const sharedRedis = config.store?.postgres ? config.store.redis : undefined;
  return sharedRedis ? createQueuedBatchRunner({ ...batchRunner, client: () => createQueueClient(sharedRedis), prefix: sharedRedis.prefix, leaseMs: config.batch.leaseMs }) : createBatchRunner(batchRunner);
}

/** An evaluation's embeddings, as the key that owns it (`""`: no key), bounded like a client's call would be: a report waits on them. */
function embedAsOwner(calls: CallLayer, tenancy: Tenancy): NonNullable<EvaluationsOptions["embed"]> {
  return async (model, texts, owner) => {
    const principal = owner === "" ? undefined : tenancy.keyByHash(owner);
    if (owner !== "" && !principal) throw new GatewayError("unauthenticated", "the key this evaluation runs as is no longer configured");
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new GatewayError("deadline_exceeded", "embedding the answers took longer than 2 minutes")), 120_000);
    try {
      const call = { requestId: `eval_${randomUUID().replaceAll("-", "")}`, edge: "evaluation", signal: controller.signal, background: true };
      return (await calls.embed({ model, inputs: texts }, principal, call).result).vectors;
    } finally {
      clearTimeout(timer);
    }
  };
}
