import { Agent, type Dispatcher, request } from "undici";
import type { TimeoutsConfig } from "../config/schema.js";
import type { UpstreamRequest } from "../providers/provider.js";

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

/** Sends provider requests over pooled keep-alive connections. */
export interface UpstreamClient {
  send(req: UpstreamRequest, options: SendOptions): Promise<UpstreamResponse>;
  close(): Promise<void>;
}

/**
 * undici with every timeout set explicitly from configuration: its defaults
 * (300 s for headers and body) are far too patient for a gateway. The body
 * timeout is the idle timeout: it measures silence between reads and does
 * not fire while we hold the stream paused for a slow client.
 */
export function createUpstreamClient(): UpstreamClient {
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
        dispatcher: agentFor(options.pool, timeouts.connectMs),
        headersTimeout: timeouts.headersMs,
        bodyTimeout: timeouts.idleMs,
      });
      return { status: res.statusCode, headers: res.headers, body: res.body };
    },
    async close() {
      await Promise.all([...agents.values()].map((a) => a.destroy()));
      agents.clear();
    },
  };
}
