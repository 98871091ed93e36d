import { createServer } from "node:http";
import { createServer as createHttp2Server } from "node:http2";
import type { Socket } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { Agent, request } from "undici";
import { ChatService, type StreamChatRequest } from "../gen/sluice/v1/chat_service_pb.js";
import { createFloorStats } from "./floor-stats.js";

/**
 * The gRPC floor: the least a gRPC relay in Node can do on this machine,
 * beside the HTTP floor (floor-proxy.ts). It serves `sluice.v1.ChatService/
 * StreamChat` with connect-node over cleartext HTTP/2 (as the gateway's
 * gRPC edge is served), forwards the prompt's text to the simulator's
 * Chat Completions with undici, and sends one `TextDelta` per upstream SSE
 * event carrying the event's raw `data` (role chunk, deltas, finish chunk,
 * `[DONE]`): the events are split, never parsed, and nothing is routed,
 * limited or translated. Measured beside the gateway's gRPC edge, what is
 * left between them is Sluice's; what is between this and the HTTP floor is
 * HTTP/2's and protobuf's own price.
 *
 * A client that leaves aborts the upstream request (connect's signal).
 * HTTP/2 settings and TCP_NODELAY are the gateway's (1,000 streams a connection).
 * `GET /_floor/stats` (bench/floor-stats.ts) is served on a second,
 * HTTP/1.1 port: cleartext HTTP/2 has no upgrade from HTTP/1.1 here.
 *
 * Usage: node floor-grpc.js UPSTREAM_OPENAI_BASE_URL; prints {"url": ..., "stats": ...} when listening.
 */
const upstream = process.argv[2];
if (!upstream) throw new Error("usage: floor-grpc UPSTREAM_OPENAI_BASE_URL");
const dispatcher = new Agent({ keepAliveTimeout: 30_000, pipelining: 1, headersTimeout: 600_000, bodyTimeout: 600_000 });
let activeStreams = 0;
const stats = createFloorStats(() => activeStreams);

/** The prompt's text parts, one user message each: all the simulator reads (its `#sim` knobs). */
function upstreamBody(req: StreamChatRequest): string {
  const messages = req.messages.map((m) => ({ role: "user", content: m.content.map((p) => (p.part.case === "text" ? p.part.value : "")).join("") }));
  return JSON.stringify({ model: req.model, stream: true, messages });
}

const handler = connectNodeAdapter({
  routes(router) {
    router.service(ChatService, {
      async *streamChat(req, context) {
        activeStreams++;
        try {
          const answer = await request(`${upstream}/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: upstreamBody(req),
            signal: context.signal,
            dispatcher,
          });
          if (answer.statusCode !== 200) {
            await answer.body.dump();
            throw new ConnectError(`upstream HTTP ${answer.statusCode}`, Code.Unavailable);
          }
          const decoder = new TextDecoder();
          let pending = "";
          let sequence = 0n;
          for await (const chunk of answer.body) {
            pending += decoder.decode(chunk as Buffer, { stream: true });
            for (let end = pending.indexOf("\n\n"); end >= 0; end = pending.indexOf("\n\n")) {
              const event = pending.slice(0, end);
              pending = pending.slice(end + 2);
              yield { sequence: sequence++, delta: { case: "text", value: { text: event.startsWith("data: ") ? event.slice(6) : event } } };
            }
          }
        } finally {
          activeStreams--;
        }
      },
    });
  },
});

const server = createHttp2Server({ settings: { maxConcurrentStreams: 1_000 } }, handler);
// As the gateway does (src/server/gateway-server.ts): with Nagle on, each small message after the first waits for a delayed ACK.
server.on("connection", (socket: Socket) => socket.setNoDelay(true));
const statsServer = createServer((req, res) => {
  const [path, search] = (req.url ?? "").split("?");
  if (path !== "/_floor/stats") return void res.writeHead(404).end();
  res.writeHead(200, { "content-type": "application/json" }).end(stats(new URLSearchParams(search ?? "")));
});
server.listen({ port: 0, host: "127.0.0.1", backlog: 4096 }, () => {
  statsServer.listen({ port: 0, host: "127.0.0.1" }, () => {
    const port = (server.address() as { port: number }).port;
    const statsPort = (statsServer.address() as { port: number }).port;
    process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, stats: `http://127.0.0.1:${statsPort}/_floor/stats` })}\n`);
  });
});
process.on("SIGTERM", () => process.exit(0));
