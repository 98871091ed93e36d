import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../logging/logger.js";
import { boundedFetch } from "./bounded-fetch.js";
import { outsideCall } from "./call-context.js";
import { type LinkCallOptions, type ServerLink, whileNotAborted } from "./server-link.js";
import { isSessionGone } from "./upstream-errors.js";

export const CLIENT_INFO = { name: "sluice-mcp-gateway", version: "1.0.0" } as const;

export interface HttpLinkOptions {
  readonly server: string;
  readonly url: string;
  /** `headers` and `headersFromEnv` (read at start): the gateway's own, for every request. */
  readonly headers: Readonly<Record<string, string>>;
  readonly maxResultBytes: number;
  readonly timeoutMs: number;
  readonly log: Logger;
  readonly onListChanged: () => void;
}

/**
 * A streamable HTTP server: one long-lived SDK Client per process for
 * listings and calls without a session (its GET stream brings
 * `tools/list_changed`), and for a call that carries the caller's sealed
 * upstream session a short-lived Client over a transport created with that
 * `sessionId` (the SDK then skips initialize: no round trip). A sealed
 * session the server no longer knows (404: it expired there) is replaced,
 * for that call, by a fresh session, which is ended after it.
 */
export function createHttpLink(options: HttpLinkOptions): ServerLink {
  const { server, url, headers, maxResultBytes, log } = options;
  const endpoint = new URL(url);
  const fetch = boundedFetch(maxResultBytes);
  const transportFor = (sessionId?: string) => new StreamableHTTPClientTransport(endpoint, { fetch, requestInit: { headers: { ...headers } }, ...(sessionId !== undefined ? { sessionId } : {}) });
  let shared: Promise<Client> | undefined;
  let lastError: string | undefined;
  let connected = false;
  const clients = new Set<Client>();

  const connect = async (sessionId: string | undefined, signal: AbortSignal, timeoutMs: number): Promise<Client> => {
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    client.onerror = () => {};
    await client.connect(transportFor(sessionId), { signal, timeout: timeoutMs });
    return client;
  };

  const sharedClient = (timeoutMs: number): Promise<Client> => {
    if (shared) return shared;
    const opening = outsideCall(async () => {
      const client = new Client(CLIENT_INFO, { capabilities: {} });
      client.onerror = () => {};
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => options.onListChanged());
      client.onclose = () => {
        if (shared === opening) shared = undefined;
        connected = false;
      };
      await client.connect(transportFor(), { timeout: timeoutMs });
      return client;
    });
    shared = opening;
    opening.then(
      () => {
        connected = true;
        lastError = undefined;
      },
      (error: unknown) => {
        if (shared === opening) shared = undefined;
        connected = false;
        lastError = error instanceof Error ? error.message.slice(0, 200) : "connect failed";
      },
    );
    return opening;
  };

  const once = async <T>(sessionId: string, call: LinkCallOptions, request: (client: Client) => Promise<T>, fresh: boolean): Promise<T> => {
    const client = await connect(fresh ? undefined : sessionId, call.signal, call.timeoutMs);
    clients.add(client);
    try {
      return await request(client);
    } finally {
      clients.delete(client);
      const transport = client.transport as StreamableHTTPClientTransport | undefined;
      // A fresh session served this call only: end it upstream too. A sealed one lives on for the caller's next call.
      if (fresh) await transport?.terminateSession().catch(() => {});
      await client.close().catch(() => {});
    }
  };

  // Connected at start, so that its list_changed notifications and its health are there before the first caller.
  sharedClient(options.timeoutMs).catch(() => {});

  return {
    transport: "http",
    async run(call, request) {
      if (call.sessionId === undefined) {
        const client = await whileNotAborted(sharedClient(call.timeoutMs), call.signal);
        try {
          return await request(client);
        } catch (error) {
          if (!isSessionGone(error)) throw error;
          // The long-lived session ended upstream (a restarted server): open a new one and try once more.
          log.info({ event: "mcp.session_reopened", server });
          if (shared) void shared.then((c) => c.close()).catch(() => {});
          shared = undefined;
          return request(await whileNotAborted(sharedClient(call.timeoutMs), call.signal));
        }
      }
      try {
        return await once(call.sessionId, call, request, false);
      } catch (error) {
        if (!isSessionGone(error)) throw error;
        log.info({ event: "mcp.session_expired", server, fallback: "fresh session for this call" });
        return once(call.sessionId, call, request, true);
      }
    },
    async openSession(signal, timeoutMs) {
      const client = await outsideCall(() => connect(undefined, signal, timeoutMs));
      const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId;
      // Closing the client closes only this side: the session stays open upstream for the caller.
      await client.close().catch(() => {});
      if (sessionId === undefined) throw new Error("the server opened no session");
      return sessionId;
    },
    state: () => (connected ? "up" : lastError !== undefined ? "down" : "starting"),
    get lastError() {
      return lastError;
    },
    async close() {
      const current = shared;
      shared = undefined;
      await Promise.all([current?.then((c) => c.close()).catch(() => {}), ...[...clients].map((c) => c.close().catch(() => {}))]);
    },
  };
}
