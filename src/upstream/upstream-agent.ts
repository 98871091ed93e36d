import { Agent, buildConnector, type Dispatcher } from "undici";
import type { UpstreamHttpConfig } from "../config/schema.js";
import { H2Connections } from "./h2-connections.js";
import type { PoolStats } from "./http-client.js";

/** The error code of a connection refused for not speaking h2: a connection failure like a refused connect. */
export const NO_H2_CODE = "ERR_UPSTREAM_NO_H2";

/**
 * Bytes a provider may send on one HTTP/2 stream ahead of what Sluice has
 * read: HTTP/2's default. What arrives is held in the process (with HTTP/1.1
 * it waited in the kernel's socket buffer), so for a client that stops reading
 * this is what its stream can hold; undici's own 256 KiB made a slow
 * consumer's live heap 100 times larger. It is ample for model streams: even
 * at 100 ms round trip it allows 640 KiB/s per stream.
 */
const STREAM_WINDOW_BYTES = 65_535;

/** Connections stay open this long without a request, then close. */
const KEEP_ALIVE_MS = 30_000;

/** One provider's connections: what requests are dispatched on, and what metrics read. */
export interface UpstreamAgent {
  readonly dispatcher: Dispatcher;
  stats(): PoolStats;
  destroy(): Promise<void>;
}

/**
 * The connections for one provider's HTTP settings.
 *
 * HTTP/1.1: an undici Agent with pipelining 1, so each stream in flight has a
 * connection of its own (a streaming response holds its connection to the end).
 *
 * HTTP/2: streams share connections, `maxStreamsPerConnection` each. undici
 * multiplexes a POST only when the request is marked idempotent (it will not
 * otherwise put a second non-idempotent request beside one in flight, on h1 or
 * h2), and an idempotent POST on an HTTP/1.1 connection would be pipelined
 * behind a streaming response. So the h2 connector refuses any connection that
 * did not negotiate h2, and only these requests are marked idempotent (undici
 * itself never retries them; the mark only lets them share a connection).
 */
export function createUpstreamAgent(http: UpstreamHttpConfig, connectMs: number): UpstreamAgent {
  if (http.version === "1.1") {
    const agent = new Agent({ connect: { timeout: connectMs }, keepAliveTimeout: KEEP_ALIVE_MS, pipelining: 1 });
    return { dispatcher: agent, stats: () => agentStats(agent), destroy: () => agent.destroy() };
  }
  const connections = new H2Connections(http.maxStreamsPerConnection, {
    allowH2: true,
    pipelining: http.maxStreamsPerConnection,
    maxConcurrentStreams: http.maxStreamsPerConnection,
    initialWindowSize: STREAM_WINDOW_BYTES,
    keepAliveTimeout: KEEP_ALIVE_MS,
    connect: h2Connector(connectMs),
  });
  return { dispatcher: connections, stats: () => connections.connections(), destroy: () => connections.shutdown() };
}

/** undici's connector, speaking h2 by ALPN over https and by prior knowledge over http, and nothing else. */
function h2Connector(connectMs: number): buildConnector.connector {
  // `useH2c` is read by undici's connector but missing from its types.
  const connect = buildConnector({ timeout: connectMs, allowH2: true, useH2c: true } as buildConnector.BuildOptions);
  return (options, callback) => {
    connect(options, (error, socket) => {
      if (error || !socket) return callback(error ?? new Error("no socket"), null);
      if (options.protocol === "https:" && (socket as { alpnProtocol?: unknown }).alpnProtocol !== "h2") {
        socket.destroy();
        return callback(Object.assign(new Error(`${options.hostname} did not negotiate HTTP/2 (http.version is "2")`), { code: NO_H2_CODE }), null);
      }
      callback(null, socket);
    });
  };
}

/** An Agent keeps a Pool per origin (pipelining 1, many connections). */
function agentStats(agent: Agent): PoolStats {
  let connected = 0;
  let free = 0;
  for (const origin of Object.values(agent.stats)) {
    if (!("free" in origin)) continue;
    connected += origin.connected;
    free += origin.free;
  }
  return { connected, busy: connected - free };
}
