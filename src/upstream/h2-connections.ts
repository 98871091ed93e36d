import { Client, Dispatcher } from "undici";
import type { PoolStats } from "./http-client.js";

/**
 * HTTP/2 connections to a provider, filled in order: a request joins the
 * first connection with fewer than `maxStreams` streams in flight or waiting,
 * and a new connection opens only when every one is full.
 *
 * undici's Pool counts a connection that is still connecting as busy, so
 * every request of a burst that arrives during the handshake opened a
 * connection of its own (400 connections for 2,000 streams ramped in one
 * second, against the 20 they need).
 */
export class H2Connections extends Dispatcher {
  readonly #clients = new Map<string, Client[]>();
  readonly #maxStreams: number;
  readonly #options: Client.Options;

  constructor(maxStreams: number, options: Client.Options) {
    super();
    this.#maxStreams = maxStreams;
    this.#options = options;
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const origin = String(options.origin);
    let clients = this.#clients.get(origin);
    if (!clients) this.#clients.set(origin, (clients = []));
    let client = clients.find((c) => c.stats.size < this.#maxStreams);
    if (!client) clients.push((client = new Client(origin, this.#options)));
    // false only says this connection is full; the request is queued on it either way.
    client.dispatch(options, handler);
    return true;
  }

  /** Open connections, and those carrying a stream now. */
  connections(): PoolStats {
    let connected = 0;
    let busy = 0;
    for (const clients of this.#clients.values()) {
      for (const client of clients) {
        const stats = client.stats;
        if (stats.connected) connected++;
        if (stats.running > 0) busy++;
      }
    }
    return { connected, busy };
  }

  /** Ends every connection and fails whatever is still in flight. */
  async shutdown(): Promise<void> {
    const all = [...this.#clients.values()].flat();
    this.#clients.clear();
    await Promise.all(all.map((c) => c.destroy()));
  }
}
