import { once } from "node:events";
import type { RequestListener } from "node:http";
import type { Http2Session } from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import * as httpolyglot from "@httptoolkit/httpolyglot";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { createChatService } from "../edges/grpc/chat-service.js";
import { registerReflection } from "../edges/grpc/reflection.js";
import { createOpenAiFacade } from "../edges/openai/facade.js";
import type { Logger } from "../logging/logger.js";
import type { ChatPipeline } from "../pipeline/chat-pipeline.js";
import { ChatService } from "../../gen/sluice/v1/chat_service_pb.js";
import type { StreamRegistry } from "../pipeline/stream-registry.js";
import { type AnyRequest, type AnyResponse, handleHealth, type HealthState, notFound } from "./health.js";
import { createRuntimeStats } from "./runtime-stats.js";

export interface GatewayServerOptions {
  readonly pipeline: ChatPipeline;
  readonly logger: Logger;
  readonly host: string;
  readonly port: number;
  /** HTTP/2 PING interval; a PING still unanswered at the next one closes the session. */
  readonly keepaliveMs: number;
  readonly facade: { readonly keepaliveMs: number; readonly maxBodyBytes: number };
  /** Given when /debug/runtime should be served. */
  readonly debug?: { readonly registry: StreamRegistry };
}

export interface GatewayServer {
  /** e.g. http://127.0.0.1:8080 */
  readonly url: string;
  readonly port: number;
  readonly health: HealthState;
  /**
   * Readiness turns 503 and HTTP/2 sessions get GOAWAY: in-flight streams go
   * on, clients take new ones elsewhere. The port stays open so that health
   * checks read 503 and late requests get a clean UNAVAILABLE, not a refused
   * connection.
   */
  stopAccepting(): void;
  /** Waits up to `graceMs` for connections to finish, then destroys the rest. */
  close(graceMs?: number): Promise<void>;
}

/**
 * Sends HTTP/2 PINGs so that intermediaries see traffic on connections whose
 * streams are silent (a model thinking), and so that dead peers are found:
 * a PING still unanswered when the next is due closes the session.
 */
function keepAlive(session: Http2Session, intervalMs: number): void {
  let outstanding = false;
  const timer = setInterval(() => {
    if (session.closed || session.destroyed) return;
    if (outstanding) {
      session.destroy();
      return;
    }
    outstanding = session.ping((error) => {
      if (!error) outstanding = false;
    });
  }, intervalMs);
  timer.unref();
  session.once("close", () => clearInterval(timer));
}

/**
 * One port for everything: gRPC (HTTP/2), gRPC-Web and Connect (HTTP/1.1 or
 * HTTP/2), health endpoints. Cleartext HTTP/2 and HTTP/1.1 share the port
 * through httpolyglot, which peeks at the first bytes for the HTTP/2
 * preface; Node's own `allowHTTP1` only works over TLS.
 */
export async function startGatewayServer(options: GatewayServerOptions): Promise<GatewayServer> {
  const { pipeline, logger } = options;
  const health: HealthState = { ready: false };
  const routes = (router: ConnectRouter) => {
    router.service(ChatService, createChatService(pipeline));
    registerReflection(router, [ChatService]);
  };
  const facade = createOpenAiFacade({ pipeline, ...options.facade });
  const runtime = options.debug ? createRuntimeStats(options.debug.registry) : () => false;
  const handler = connectNodeAdapter({
    routes,
    // Token deltas are tens of bytes: compression costs CPU on every message
    // and its buffering would hide backpressure. The server accepts and sends
    // uncompressed messages only, which is what every client sends by default.
    acceptCompression: [],
    fallback(req: AnyRequest, res: AnyResponse) {
      if (!handleHealth(req, res, health) && !facade(req, res) && !runtime(req, res)) notFound(res);
    },
  });

  const sockets = new Set<Socket>();
  const sessions = new Set<Http2Session>();
  const server = httpolyglot.createServer({}, handler as unknown as RequestListener);
  // httpolyglot re-emits listeners on its inner HTTP/1.1 and HTTP/2 servers,
  // so one socket can be reported more than once: the sets make that harmless.
  server.on("connection", (socket: Socket) => {
    if (sockets.has(socket)) return;
    // Deltas are small writes in quick succession: with Nagle on, each one
    // after the first waits for the client's delayed ACK (~40 ms).
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  server.on("session", (session: Http2Session) => {
    if (sessions.has(session)) return;
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    keepAlive(session, options.keepaliveMs);
  });
  server.on("error", (error: Error) => logger.error({ event: "server.error", err: error }));
  server.listen(options.port, options.host);
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  health.ready = true;
  const closed = once(server, "close");
  let listening = true;

  const stopAccepting = () => {
    health.ready = false;
    for (const session of sessions) if (!session.closed) session.close();
  };

  return {
    url: `http://${host}:${port}`,
    port,
    health,
    stopAccepting,
    async close(graceMs = 0) {
      stopAccepting();
      if (listening) {
        listening = false;
        server.close();
      }
      if (graceMs > 0 && sockets.size > 0) {
        const timer = setTimeout(() => sockets.forEach((s) => s.destroy()), graceMs);
        await closed;
        clearTimeout(timer);
        return;
      }
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
