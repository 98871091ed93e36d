import { Agent, buildConnector } from "undici";
import type { UpstreamHttpConfig } from "../config/schema.js";

/** Connections stay open this long without a request, then close. */
const KEEP_ALIVE_MS = 30_000;

/**
 * The undici Agent for one provider's HTTP settings.
 *
 * HTTP/1.1: pipelining 1, so each stream in flight has a connection of its
 * own (a streaming response holds its connection to the end).
 *
 * HTTP/2: streams share connections, `maxStreamsPerConnection` each. undici
 * multiplexes a POST only when the request is marked idempotent (it will not
 * otherwise put a second non-idempotent request beside one in flight, on h1 or
 * h2), and an idempotent POST on an HTTP/1.1 connection would be pipelined
 * behind a streaming response. So an h2 agent refuses any connection that did
 * not negotiate h2, and only its requests are marked idempotent (undici itself
 * never retries them; it only lets them share the connection).
 */
export function createUpstreamAgent(http: UpstreamHttpConfig, connectMs: number): Agent {
  if (http.version === "1.1") return new Agent({ connect: { timeout: connectMs }, keepAliveTimeout: KEEP_ALIVE_MS, pipelining: 1 });
  // Over http (no ALPN) the first bytes are the h2 preface: prior knowledge.
  // `useH2c` is read by undici's connector but missing from its types.
  const connect = buildConnector({ timeout: connectMs, allowH2: true, useH2c: true } as buildConnector.BuildOptions);
  return new Agent({
    allowH2: true,
    pipelining: http.maxStreamsPerConnection,
    maxConcurrentStreams: http.maxStreamsPerConnection,
    keepAliveTimeout: KEEP_ALIVE_MS,
    connect(options, callback) {
      connect(options, (error, socket) => {
        if (error || !socket) return callback(error ?? new Error("no socket"), null);
        if (options.protocol === "https:" && (socket as { alpnProtocol?: unknown }).alpnProtocol !== "h2") {
          socket.destroy();
          return callback(Object.assign(new Error(`${options.hostname} did not negotiate HTTP/2 (http.version is "2")`), { code: "ERR_UPSTREAM_NO_H2" }), null);
        }
        callback(null, socket);
      });
    },
  });
}
