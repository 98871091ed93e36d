import { Agent, type Dispatcher, request } from "undici";
import type { TimeoutsConfig } from "../config/schema.js";

/** A provider HTTP request, fully built by an adapter; the client sends it as is. */
export interface UpstreamRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface UpstreamResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** A Readable with real backpressure: not reading it stops reading the socket. */
  readonly body: Dispatcher.ResponseData["body"];
}

export interface SendOptions {
  /** Aborting it destroys the request and its socket at once. */
  readonly signal: AbortSignal;
  readonly timeouts: TimeoutsConfig;
  /** Connection pool key: one pool per provider. */
  readonly pool: string;
  readonly requestId: string;
}

/** Connections of one provider's pool. */
export interface PoolStats {
  /** Open connections. */
  readonly connected: number;
  /** Connections carrying a request now. */
  readonly busy: number;
}

/** Sends provider requests over pooled keep-alive connections. */
export interface UpstreamClient {
  send(req: UpstreamRequest, options: SendOptions): Promise<UpstreamResponse>;
  /** Connections per provider pool, for metrics. */
  stats(): ReadonlyMap<string, PoolStats>;
  close(): Promise<void>;
}

export interface UpstreamClientOptions {
  /**
   * Where every request goes instead of a connection pool per provider: the
   * in-process simulator (simulator/in-process.ts) for tests without
   * sockets. Its owner closes it.
   */
  readonly dispatcher?: Dispatcher;
}

/**
 * undici with the connect timeout from configuration (only undici sees that
 * phase) and its headers and body timeouts off: the attempt's phase timer
 * enforces those, with the one wording in phase-timeout.ts.
 */
export function createUpstreamClient({ dispatcher }: UpstreamClientOptions = {}): UpstreamClient {
  const agents = new Map<string, Agent>();

  function agentFor(pool: string, connectMs: number): Agent {
    const key = `${pool}\u0000${connectMs}`;
    let agent = agents.get(key);
    if (!agent) {
      agent = new Agent({ connect: { timeout: connectMs }, keepAliveTimeout: 30_000, pipelining: 1 });
      agents.set(key, agent);
    }
    return agent;
  }

  return {
    async send(req, options) {
      const { timeouts } = options;
      const res = await request(req.url, {
        method: "POST",
        headers: { ...req.headers, "x-request-id": options.requestId },
        body: req.body,
        signal: options.signal,
        dispatcher: dispatcher ?? agentFor(options.pool, timeouts.connectMs),
        // The phase timer owns headers, first-token, idle and total limits;
        // undici's own would enforce the same limits a second time.
        headersTimeout: 0,
        bodyTimeout: 0,
      });
      return { status: res.statusCode, headers: res.headers, body: res.body };
    },
    stats() {
      const out = new Map<string, PoolStats>();
      for (const [key, agent] of agents) {
        const pool = key.slice(0, key.indexOf("\u0000"));
        let connected = 0;
        let free = 0;
        // An agent keeps a Pool per origin (pipelining 1, many connections).
        for (const origin of Object.values(agent.stats)) {
          if (!("free" in origin)) continue;
          connected += origin.connected;
          free += origin.free;
        }
        const previous = out.get(pool) ?? { connected: 0, busy: 0 };
        out.set(pool, { connected: previous.connected + connected, busy: previous.busy + connected - free });
      }
      return out;
    },
    async close() {
      await Promise.all([...agents.values()].map((a) => a.destroy()));
      agents.clear();
    },
  };
}
