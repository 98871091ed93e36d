import { once } from "node:events";
import type { Http2Session } from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import * as httpolyglot from "@httptoolkit/httpolyglot";
import type { ConnectRouter } from "@connectrpc/connect";
import type { ReloadCounts } from "../config/live-config.js";
import type { TlsCredentials } from "../config/tls-files.js";
import { createAdminService } from "../edges/grpc/admin-service.js";
import { createChatService } from "../edges/grpc/chat-service.js";
import { createHealthService } from "../edges/grpc/health-service.js";
import { registerReflection } from "../edges/grpc/reflection.js";
import { createOpenAiFacade } from "../edges/openai/facade.js";
import type { Logger } from "../logging/logger.js";
import type { ChatPipeline } from "../pipeline/chat-pipeline.js";
import { createHealthState, type HealthState } from "../health/health-state.js";
import { ChatService } from "../../gen/sluice/v1/chat_service_pb.js";
import { AdminService } from "../../gen/sluice/admin/v1/admin_service_pb.js";
import type { ReplayStore } from "../store/replay-store.js";
import type { Tenancy } from "../tenancy/tenancy.js";
import type { ResumableStreams } from "../resume/resumable-streams.js";
import type { ConsoleAccess } from "../config/config.js";
import type { ConsoleAssets } from "../console/console-assets.js";
import { createConsoleRoute } from "../console/console-route.js";
import type { StatsWatch } from "../edges/grpc/watch-stats.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import type { StreamRegistry } from "../pipeline/stream-registry.js";
import { type ConnectionGuard, type ConnectionLimits, guardConnections } from "./connection-guard.js";
import { handleHealth, notFound } from "./health.js";
import { guardRequests, type Route } from "./request-guard.js";
import { createRpcHandler } from "./rpc-handler.js";
import type { RequestBodyLimits } from "./rpc-request.js";
import { createRuntimeStats } from "./runtime-stats.js";
import { pathOf } from "../http/node-http.js";
import type { Telemetry } from "../telemetry/telemetry.js";
import { serveMetrics } from "../telemetry/metrics-route.js";
import { cameOverTls, refuseCleartext, tlsListenerOptions } from "./tls-listener.js";

export interface GatewayServerOptions {
  readonly pipeline: ChatPipeline;
  readonly logger: Logger;
  readonly host: string;
  readonly port: number;
  /** HTTP/2 PING interval; a PING still unanswered at the next one closes the session. */
  readonly keepaliveMs: number;
  readonly connections: ConnectionLimits;
  /** Concurrent streams one HTTP/2 connection may open (advertised in SETTINGS; more are refused with REFUSED_STREAM). */
  readonly maxStreamsPerConnection: number;
  readonly requests: RequestBodyLimits;
  /** Longest a client may take no bytes before its stream is reset. */
  readonly sendTimeoutMs: number;
  readonly facade: { readonly keepaliveMs: number };
  /** Given when /debug/runtime should be served. */
  readonly debug?: { readonly registry: StreamRegistry; readonly reloads: () => ReloadCounts };
  /** TLS on the listener; absent = cleartext h2c and HTTP/1.1. */
  readonly tls?: TlsCredentials;
  /** Traces for every request; GET /metrics when metrics are on and served on this port. */
  readonly telemetry: Telemetry;
  /** Serve /metrics here (false when a separate metrics listener serves it). */
  readonly serveMetrics: boolean;
  /** Keys, limits and usage: who each request is, and the admin service. */
  readonly tenancy?: Tenancy;
  /** Resumable streams, for both edges. */
  readonly resumable?: ResumableStreams;
  /** Where the facade keeps thinking signatures between turns; its own in-process store when absent. */
  readonly replayStore?: ReplayStore;
  /** Serve sluice.admin.v1.AdminService (the configuration has an admin key). */
  readonly admin?: boolean;
  /** /console and its data feed; `watch` absent: AdminService/WatchStats is not served. */
  readonly console?: { readonly access: ConsoleAccess; readonly assets: ConsoleAssets; readonly watch?: StatsWatch };
}

export interface GatewayServer {
  /** e.g. http://127.0.0.1:8080, or https://… over TLS */
  readonly url: string;
  readonly port: number;
  readonly health: HealthState;
  readonly connections: ConnectionGuard;
  /** WatchStats streams, when served. */
  readonly statsWatch?: StatsWatch;
  /**
   * Readiness turns 503 (gRPC health: NOT_SERVING) and HTTP/2 sessions get
   * GOAWAY: in-flight streams go on, clients take new ones elsewhere. The port stays open so that health
   * checks read 503 and late requests get a clean UNAVAILABLE, not a refused
   * connection.
   */
  stopAccepting(): void;
  /** Ends health watches, waits up to `graceMs` for connections to finish, then destroys the rest. */
  close(graceMs?: number): Promise<void>;
}

/**
 * Sends HTTP/2 PINGs so that intermediaries see traffic on connections whose
 * streams are silent (a model thinking), and so that dead peers are found:
 * a PING still unanswered two intervals after it was sent closes the
 * session. Two, not one: timers run before sockets are read, so after one
 * long event-loop stall an answer that is already waiting has not been
 * seen yet, and a healthy session would be killed.
 */
function keepAlive(session: Http2Session, intervalMs: number): void {
  let outstanding = false;
  let missed = 0;
  const timer = setInterval(() => {
    if (session.closed || session.destroyed) return;
    if (outstanding) {
      if (++missed >= 2) session.destroy();
      return;
    }
    missed = 0;
    outstanding = session.ping((error) => {
      if (!error) outstanding = false;
    });
  }, intervalMs);
  timer.unref();
  session.once("close", () => clearInterval(timer));
}

/**
 * One port for everything: gRPC (HTTP/2), gRPC-Web and Connect (HTTP/1.1 or
 * HTTP/2), the OpenAI facade, health endpoints. Cleartext HTTP/2 and
 * HTTP/1.1 share the port through httpolyglot, which peeks at the first
 * bytes for the HTTP/2 preface; Node's own `allowHTTP1` only works over TLS.
 * With TLS, httpolyglot terminates it and picks the HTTP server by ALPN, the
 * same servers and guards serve the decrypted sockets, and cleartext is
 * refused.
 * Every connection passes the connection guard, every request the request
 * guard.
 */
export async function startGatewayServer(options: GatewayServerOptions): Promise<GatewayServer> {
  const { pipeline, logger } = options;
  const health = createHealthState();
  const { tenancy } = options;
  // A fail-closed store that is not connected would refuse every keyed request: not ready until it is.
  const holdForStore = (storeReady: boolean) => {
    health.hold("store", !storeReady);
    logger.info({ event: "server.readiness", ready: health.ready, waitingFor: health.waitingFor });
  };
  if (tenancy && !tenancy.ready) health.hold("store", true);
  const stopFollowingStore = tenancy?.onReadyChange(holdForStore);
  const watch = options.console?.watch;
  const admin = tenancy && options.admin ? createAdminService(tenancy.admin) : undefined;
  const rpc = createRpcHandler({
    routes: (router: ConnectRouter) => {
      router.service(
        ChatService,
        createChatService({ pipeline, maxJsonDepth: options.requests.maxJsonDepth, ...(tenancy ? { tenancy } : {}), ...(options.resumable ? { resumable: options.resumable } : {}) }),
      );
      router.service(Health, createHealthService(health, [ChatService.typeName]));
      // WatchStats may be served without the rest (an open console with no admin key): the rest then answers UNIMPLEMENTED.
      if (admin || watch) router.service(AdminService, { ...admin, ...(watch ? { watchStats: watch.watchStats } : {}) });
      registerReflection(router, admin || watch ? [ChatService, AdminService, Health] : [ChatService, Health]);
    },
    limits: options.requests,
    sendTimeoutMs: options.sendTimeoutMs,
  });
  const facade = createOpenAiFacade({
    pipeline,
    keepaliveMs: options.facade.keepaliveMs,
    limits: options.requests,
    sendTimeoutMs: options.sendTimeoutMs,
    ...(tenancy ? { tenancy } : {}),
    ...(options.resumable ? { resumable: options.resumable } : {}),
    ...(options.replayStore ? { replayStore: options.replayStore } : {}),
  });
  let guard: ConnectionGuard | undefined;
  const runtime = options.debug ? createRuntimeStats(options.debug.registry, () => guard, options.debug.reloads) : () => false;

  const metrics = options.serveMetrics ? options.telemetry.metrics : undefined;
  const consoleRoute = options.console ? createConsoleRoute(options.console.access, options.console.assets) : () => false;
  const route: Route = (req, res, exchange) => {
    if (options.tls && !cameOverTls(req)) {
      exchange.code = "tls_required";
      res.destroy();
      return;
    }
    const served = rpc(req, res, exchange);
    if (served !== false) return served;
    if (handleHealth(req, res, exchange, health)) return;
    const viaFacade = facade(req, res, exchange);
    if (viaFacade !== false) return viaFacade;
    if (runtime(req, res, exchange)) return;
    if (consoleRoute(req, res, exchange)) return;
    if (metrics && req.method === "GET" && pathOf(req) === "/metrics") return serveMetrics(metrics, req, res, exchange);
    notFound(res, exchange);
  };

  const sessions = new Set<Http2Session>();
  const server = httpolyglot.createServer(
    {
      http: { keepAliveTimeout: options.connections.idleTimeoutMs },
      http2: { settings: { maxConcurrentStreams: options.maxStreamsPerConnection } },
      ...(options.tls ? { tls: tlsListenerOptions(options.tls) } : {}),
    },
    guardRequests(route, logger, options.telemetry.tracing) as Parameters<typeof httpolyglot.createServer>[1],
  );
  guard = guardConnections(server, options.connections, logger);
  if (options.tls) refuseCleartext(server, logger);
  server.on("connection", (socket: Socket) => {
    // Deltas are small writes in quick succession: with Nagle on, each one
    // after the first waits for the client's delayed ACK (~40 ms).
    socket.setNoDelay(true);
  });
  server.on("session", (session: Http2Session) => {
    if (sessions.has(session)) return;
    sessions.add(session);
    session.on("error", (error: Error) => logger.debug({ event: "session.error", err: error }));
    session.once("close", () => sessions.delete(session));
    keepAlive(session, options.keepaliveMs);
  });
  server.on("clientError", (error: Error, socket: Socket) => {
    // HTTP/1.1 bytes Node's parser refused (a malformed request line,
    // headers over 16 KiB). Answered and closed here; nothing reaches a route.
    const code = (error as NodeJS.ErrnoException).code;
    logger.debug({ event: "server.client_error", code });
    const status = code === "HPE_HEADER_OVERFLOW" ? "431 Request Header Fields Too Large" : "400 Bad Request";
    if (socket.writable && !socket.destroyed) socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    socket.destroySoon();
  });
  server.on("error", (error: Error) => logger.error({ event: "server.error", err: error }));
  server.listen(options.port, options.host);
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  health.setReady(true);
  const closed = once(server, "close");
  let listening = true;

  const stopAccepting = () => {
    health.setReady(false);
    for (const session of sessions) if (!session.closed) session.close();
  };

  return {
    url: `${options.tls ? "https" : "http"}://${host}:${port}`,
    port,
    health,
    connections: guard,
    ...(watch ? { statsWatch: watch } : {}),
    stopAccepting,
    async close(graceMs = 0) {
      stopFollowingStore?.();
      stopAccepting();
      // Health and stats watchers end their streams now, so their connections can close.
      health.close();
      watch?.close();
      if (listening) {
        listening = false;
        server.close();
      }
      const destroyAll = () => {
        for (const socket of guard.sockets()) socket.destroy();
      };
      if (graceMs > 0 && guard.open > 0) {
        const timer = setTimeout(destroyAll, graceMs);
        await closed;
        clearTimeout(timer);
        return;
      }
      destroyAll();
      await closed;
    },
  };
}
