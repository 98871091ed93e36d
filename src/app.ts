import type { Config } from "./config/config.js";
import { type ConfigSource, createLiveConfig, type LiveConfig } from "./config/live-config.js";
import { GatewayError } from "./core/errors.js";
import { createLogger, type Logger } from "./logging/logger.js";
import { createProviderGates, type ProviderGates } from "./admission/provider-gate.js";
import { createChatPipeline, type ChatPipeline } from "./pipeline/chat-pipeline.js";
import { createBreakers } from "./resilience/circuit-breaker.js";
import { createTargetOrder } from "./routing/strategies.js";
import { createTargetStats } from "./routing/target-stats.js";
import { createStreamRegistry, type StreamRegistry } from "./pipeline/stream-registry.js";
import { effectiveMaxConnections, openFileLimit } from "./server/fd-limit.js";
import { type GatewayServer, startGatewayServer } from "./server/gateway-server.js";
import { createUpstreamClient } from "./upstream/http-client.js";

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
}

export interface Sluice {
  /** The running configuration: `reload()` on SIGHUP (and file changes, with server.watchConfig). */
  readonly config: LiveConfig;
  readonly server: GatewayServer;
  /** The providers' admission queues (their depth is observable). */
  readonly gates: ProviderGates;
  readonly pipeline: ChatPipeline;
  readonly registry: StreamRegistry;
  readonly logger: Logger;
  /**
   * Graceful shutdown: readiness turns unhealthy, no new streams are
   * accepted, in-flight streams get `drainMs` to finish, then the rest are
   * ended with UNAVAILABLE and their upstream requests aborted.
   */
  shutdown(drainMs?: number): Promise<{ readonly drained: boolean; readonly aborted: number }>;
  /** Immediate close: every connection is destroyed. */
  close(): Promise<void>;
}

/** Time for ended streams to write their final status before sockets are destroyed. */
const FINAL_WRITE_GRACE_MS = 1_000;

/** Wires configuration, upstream client, pipeline and server into a running gateway. */
export async function startSluice(options: SluiceOptions): Promise<Sluice> {
  const { config } = options;
  const logger = options.logger ?? createLogger(config.log.level);
  const live = createLiveConfig({ initial: config, logger, ...(options.source ? { source: options.source } : {}) });
  const client = createUpstreamClient();
  const registry = createStreamRegistry();
  const gates = createProviderGates();
  const stats = createTargetStats();
  const breakers = createBreakers(options.clock, (key, state) => logger.warn({ event: "breaker.changed", target: key, state }));
  // Gates and breakers live as long as the process and take each new
  // configuration's provider settings; requests read the rest from
  // live.current() when they start.
  gates.configure(config.providers);
  breakers.configure(config.providers);
  live.onChange((next, previous) => {
    gates.configure(next.providers);
    breakers.configure(next.providers);
    if (next.log.level !== previous.log.level) logger.level = next.log.level;
  });
  const random = options.random ?? Math.random;
  const order = createTargetOrder({ stats, random });
  const pipeline = createChatPipeline({ config: live.current, client, logger, registry, gates, breakers, stats, order, random });
  const maxConnections = effectiveMaxConnections(config.server.maxConnections);
  if (maxConnections < config.server.maxConnections) {
    logger.warn({ event: "server.max_connections_lowered", configured: config.server.maxConnections, effective: maxConnections, openFileLimit: openFileLimit() });
  }
  const server = await startGatewayServer({
    pipeline,
    logger,
    host: options.host ?? config.server.host,
    port: options.port ?? config.server.port,
    keepaliveMs: config.server.keepaliveMs,
    connections: { headersTimeoutMs: config.server.headersTimeoutMs, idleTimeoutMs: config.server.idleTimeoutMs, maxConnections },
    maxStreamsPerConnection: config.server.maxStreamsPerConnection,
    requests: { ...config.limits, requestTimeoutMs: config.server.requestTimeoutMs },
    sendTimeoutMs: config.server.sendTimeoutMs,
    facade: config.facade,
    ...(config.server.debugEndpoints ? { debug: { registry, reloads: live.counts } } : {}),
    ...(config.server.tls ? { tls: config.server.tls } : {}),
  });

  return {
    config: live,
    server,
    gates,
    pipeline,
    registry,
    logger,
    async shutdown(drainMs = live.current().server.drainMs) {
      registry.startDraining();
      gates.close(new GatewayError("shutting_down", "the gateway is shutting down; retry on another instance"));
      server.stopAccepting();
      const inFlight = registry.active;
      logger.info({ event: "server.draining", streams: inFlight, drainMs });
      const drained = await registry.idle(drainMs);
      const aborted = registry.active;
      if (!drained) {
        registry.abortAll(new GatewayError("shutting_down", "the gateway is shutting down; retry on another instance"));
        await registry.idle(FINAL_WRITE_GRACE_MS);
      }
      await server.close(FINAL_WRITE_GRACE_MS);
      await client.close();
      logger.info({ event: "server.stopped", drained, aborted });
      return { drained, aborted };
    },
    async close() {
      await server.close();
      await client.close();
    },
  };
}
