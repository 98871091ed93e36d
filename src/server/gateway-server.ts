import { once } from "node:events";
import type { IncomingMessage } from "node:http";
import type { Http2Session } from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { TlsCredentials } from "../config/tls-files.js";
import type { HealthState } from "../health/health-state.js";
import { inviteBodyWhenRead } from "../http/expect-continue.js";
import type { AnyRequest, AnyResponse } from "../http/node-http.js";
import { serveUpgrade } from "../http/upgrade.js";
import type { Logger } from "../logging/logger.js";
import type { Tracing } from "../telemetry/tracing.js";
import { type ConnectionGuard, type ConnectionLimits, guardConnections } from "./connection-guard.js";
import { PolyglotServer } from "./polyglot-server.js";
import { guardRequests, type Route } from "./request-guard.js";
import { cameOverTls, refuseCleartext, tlsListenerOptions } from "./tls-listener.js";

export interface GatewayServerOptions {
  /** Every route of the port (routes.ts): the server only listens and guards. */
  readonly route: Route;
  /** Readiness: served by the routes, turned off here when the port stops accepting. */
  readonly health: HealthState;
  readonly logger: Logger;
  readonly host: string;
  readonly port: number;
  /** HTTP/2 PING interval; a PING still unanswered at the next one closes the session. */
  readonly keepaliveMs: number;
  readonly connections: ConnectionLimits;
  /** Concurrent streams one HTTP/2 connection may open (advertised in SETTINGS; more are refused with REFUSED_STREAM). */
  readonly maxStreamsPerConnection: number;
  /** TLS on the listener; absent = cleartext h2c and HTTP/1.1. */
  readonly tls?: TlsCredentials;
  /** The server span of every request. */
  readonly tracing: Tracing;
}

export interface GatewayServer {
  /** e.g. http://127.0.0.1:8080, or https://… over TLS */
  readonly url: string;
  readonly port: number;
  readonly health: HealthState;
  readonly connections: ConnectionGuard;
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
 * HTTP/1.1 share the port through polyglot-server.ts, which peeks at the first
 * bytes for the HTTP/2 preface; Node's own `allowHTTP1` only works over TLS.
 * With TLS, it terminates it and picks the HTTP server by ALPN, the
 * same servers and guards serve the decrypted sockets, and cleartext is
 * refused.
 * Every connection passes the connection guard, every request the request
 * guard.
 */
/**
 * Connections the kernel may queue before the gateway accepts them (capped
 * by net.core.somaxconn). Node's default, 511, overflowed in the capacity
 * benchmark at 1,000-2,000 new connections a second while the event loop
 * was busy, and clients saw connect timeouts; the same burst comes from
 * callers reconnecting behind a load balancer after a deploy.
 */
const LISTEN_BACKLOG = 4096;

export async function startGatewayServer(options: GatewayServerOptions): Promise<GatewayServer> {
  const { logger, health } = options;
  const route: Route = (req, res, exchange) => {
    if (options.tls && !cameOverTls(req)) {
      exchange.code = "tls_required";
      res.destroy();
      return;
    }
    return options.route(req, res, exchange);
  };

  const sessions = new Set<Http2Session>();
  const serve = guardRequests(route, logger, options.tracing);
  const server = new PolyglotServer(
    {
      http: { keepAliveTimeout: options.connections.idleTimeoutMs },
      http2: { settings: { maxConcurrentStreams: options.maxStreamsPerConnection } },
      ...(options.tls ? { tls: tlsListenerOptions(options.tls) } : {}),
    },
    serve,
  );
  // `Expect: 100-continue` (either HTTP version): the body is invited by whoever reads it, never before a refusal.
  server.on("checkContinue", (req: AnyRequest, res: AnyResponse) => {
    inviteBodyWhenRead(req, res);
    serve(req, res);
  });
  // `Connection: upgrade` (a WebSocket): served by the same guarded routes, with the socket for the route that takes it.
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => serveUpgrade(req, socket, head, serve));
  const guard = guardConnections(server, options.connections, logger);
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
  server.listen({ port: options.port, host: options.host, backlog: LISTEN_BACKLOG });
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
    stopAccepting,
    async close(graceMs = 0) {
      stopAccepting();
      // Health watchers end their streams now, so their connections can close.
      health.close();
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
