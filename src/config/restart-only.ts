import type { Config } from "./config.js";
import { sha256Hex } from "./key-hash.js";

/**
 * Settings the running listener took when it started: the socket it bound,
 * its TLS context, the connection and request guards, the HTTP/2 settings
 * and the edges' request limits (also connect's own message limit, a second
 * fence behind ours). A reload cannot change them without rebuilding the
 * listener, so a changed one is kept as it was and named in a warning
 * instead of being silently ignored. Each entry reads the value to compare.
 *
 * Everything else applies to the next request: providers, models (and
 * whatever else is per request), `auth` (virtual keys: their hashes,
 * allowlists, limits and budgets, and the admin key's value; only turning
 * the admin service on or off waits for a restart),
 * `limits.maxEventBytes` (read per attempt), `server.drainMs` (read at
 * shutdown), `server.watchConfig`, and `log.level`.
 */
const RESTART_ONLY: Readonly<Record<string, (config: Config) => unknown>> = {
  "server.host": (c) => c.server.host,
  "server.port": (c) => c.server.port,
  // The files are read again on reload; a rotated certificate is a change too.
  "server.tls": (c) => (c.server.tls ? [c.server.tls.cert, c.server.tls.key.reveal(), c.server.tls.clientCa ?? ""].join("\0") : undefined),
  "server.keepaliveMs": (c) => c.server.keepaliveMs,
  "server.debugEndpoints": (c) => c.server.debugEndpoints,
  "server.headersTimeoutMs": (c) => c.server.headersTimeoutMs,
  "server.requestTimeoutMs": (c) => c.server.requestTimeoutMs,
  "server.idleTimeoutMs": (c) => c.server.idleTimeoutMs,
  "server.sendTimeoutMs": (c) => c.server.sendTimeoutMs,
  "server.maxConnections": (c) => c.server.maxConnections,
  "server.maxStreamsPerConnection": (c) => c.server.maxStreamsPerConnection,
  "limits.maxRequestBytes": (c) => c.limits.maxRequestBytes,
  "limits.maxRequestElements": (c) => c.limits.maxRequestElements,
  "limits.maxJsonDepth": (c) => c.limits.maxJsonDepth,
  "facade.keepaliveMs": (c) => c.facade.keepaliveMs,
  // The meter, tracer and exporters are built once at start; the metrics listener binds its own socket.
  telemetry: (c) => JSON.stringify(c.telemetry),
  // The /console route, its assets and the WatchStats feed are wired at start.
  console: (c) => JSON.stringify(c.console),
  // The Redis connection and its fail mode are set up once; so is whether the admin service is served
  // (its key itself is read per request, so a new admin key applies at once).
  store: (c) => JSON.stringify(c.store ?? null),
  // The stream log and its bounds are set up once, like the store it lives in.
  resume: (c) => JSON.stringify(c.resume),
  "auth.adminKeyEnv": (c) => c.auth.adminKeySha256 !== undefined,
  // The cache's store and its bounds are set up once (aliases' own cache settings apply per request).
  cache: (c) => JSON.stringify(c.cache),
  // The ledger's writer (and its consumer in the usage stream's group) is set up once, behind the port.
  ledger: (c) => JSON.stringify(c.ledger),
  // The batch worker's bounds and limits are set up once, with its queue; maxShare is each provider gate's and applies on reload.
  "batch.maxFileBytes": (c) => c.batch.maxFileBytes,
  "batch.maxLines": (c) => c.batch.maxLines,
  "batch.maxLineBytes": (c) => c.batch.maxLineBytes,
  "batch.maxBatchesPerKey": (c) => c.batch.maxBatchesPerKey,
  "batch.maxUploadBytesPerDay": (c) => c.batch.maxUploadBytesPerDay,
  "batch.maxFilesPerKey": (c) => c.batch.maxFilesPerKey,
  "batch.concurrency": (c) => c.batch.concurrency,
  "batch.leaseMs": (c) => c.batch.leaseMs,
  // Custom detectors are compiled once; the audit log's writer is set up once, like the ledger's.
  compliance: (c) => JSON.stringify(c.compliance),
  // The webhook's queue and sender are set up once (the secret compared by its hash, never held in clear here).
  alerts: (c) => JSON.stringify({ ...c.alerts, webhook: c.alerts.webhook ? { ...c.alerts.webhook, secret: sha256Hex(c.alerts.webhook.secret.reveal()) } : undefined }),
};

/** The settings a reload applies without a restart, for the configuration reference (docs/configuration.md) and the completeness test. */
export const LIVE_SETTINGS = ["server.drainMs", "server.watchConfig", "log.level", "limits.maxEventBytes", "limits.maxAnswerBytes", "batch.maxShare", "providers", "models", "auth"] as const;

export const RESTART_ONLY_SETTINGS: readonly string[] = Object.keys(RESTART_ONLY);

/** The restart-only settings that differ between two configurations, by path. */
export function restartOnlyChanges(previous: Config, next: Config): string[] {
  return Object.entries(RESTART_ONLY)
    .filter(([, read]) => read(previous) !== read(next))
    .map(([path]) => path);
}
