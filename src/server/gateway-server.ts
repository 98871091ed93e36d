import { once } from "node:events";
import type { RequestListener } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import * as httpolyglot from "@httptoolkit/httpolyglot";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { createChatService } from "../edges/grpc/chat-service.js";
import { registerReflection } from "../edges/grpc/reflection.js";
import type { Logger } from "../logging/logger.js";
import type { ChatPipeline } from "../pipeline/chat-pipeline.js";
import { ChatService } from "../../gen/sluice/v1/chat_service_pb.js";
import { type AnyRequest, type AnyResponse, handleHealth, type HealthState, notFound } from "./health.js";

export interface GatewayServerOptions {
  readonly pipeline: ChatPipeline;
  readonly logger: Logger;
  readonly host: string;
  readonly port: number;
}

export interface GatewayServer {
  /** e.g. http://127.0.0.1:8080 */
  readonly url: string;
  readonly port: number;
  readonly health: HealthState;
  close(): Promise<void>;
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
  const handler = connectNodeAdapter({
    routes,
    // Token deltas are tens of bytes: compression costs CPU on every message
    // and its buffering would hide backpressure. Clients may still send
    // uncompressed requests only, which every client does by default.
    acceptCompression: [],
    fallback(req: AnyRequest, res: AnyResponse) {
      if (!handleHealth(req, res, health)) notFound(res);
    },
  });

  const sockets = new Set<Socket>();
  const server = httpolyglot.createServer({}, handler as unknown as RequestListener);
  server.on("connection", (socket: Socket) => {
    // Deltas are small writes in quick succession: with Nagle on, each one
    // after the first waits for the client's delayed ACK (~40 ms).
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  server.on("error", (error: Error) => logger.error({ event: "server.error", err: error }));
  server.listen(options.port, options.host);
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  health.ready = true;

  return {
    url: `http://${host}:${port}`,
    port,
    health,
    async close() {
      health.ready = false;
      const closed = once(server, "close");
      server.close();
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
