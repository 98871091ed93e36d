import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  type CallToolResult,
  CallToolResultSchema,
  type GetPromptResult,
  GetPromptResultSchema,
  ListPromptsResultSchema,
  ListResourcesResultSchema,
  ListToolsResultSchema,
  type ReadResourceResult,
  ReadResourceResultSchema,
  McpError as SdkMcpError,
} from "@modelcontextprotocol/sdk/types.js";
import type { McpServerSettings, McpSettings } from "../../config/mcp-schema.js";
import { clampDelay } from "../../core/timers.js";
import type { Logger } from "../../logging/logger.js";
import { MCP_ERRORS, McpError, type McpUpstreams, type ServerHealth, type UpstreamCallOptions } from "../contract.js";
import { createServerBreaker, type ServerBreaker } from "./breaker.js";
import { withCallContext } from "./call-context.js";
import { createHttpLink } from "./http-link.js";
import { createListingCache, type ListingCache } from "./listing-cache.js";
import { cutListing, type Listings } from "./listings.js";
import { type ServerLink, whileNotAborted } from "./server-link.js";
import { serverEnvironment, serverHeaders } from "./server-secrets.js";
import { createStdioLink } from "./stdio-link.js";
import { classify, STDIO_TOO_LARGE_CODE, tooLarge } from "./upstream-errors.js";

export interface McpUpstreamsDeps {
  readonly log: Logger;
  /** Where `headersFromEnv` and `envFromEnv` are read, once, at start. */
  readonly env: NodeJS.ProcessEnv;
  /** Epoch ms; injected so tests move the cache's and the breaker's time. */
  readonly now?: () => number;
}

interface Upstream {
  readonly name: string;
  readonly settings: McpServerSettings;
  readonly link: ServerLink;
  readonly breaker: ServerBreaker;
  readonly listings: ListingCache<Listings>;
  /** The last call's failure that was the server's (for health), until a call succeeds. */
  lastFailure?: string;
  /** What the bounds last left out of its listing, so that the same cut is logged once. */
  leftOut?: string;
}

/**
 * The gateway's side towards the MCP servers of `mcp.servers` (see
 * contract.ts): a connection per server (http-link.ts, stdio-link.ts), and
 * around every request the same guards — the server's breaker, its
 * `timeoutMs` (extended by progress up to `maxTotalTimeoutMs`), the
 * caller's signal (aborting sends `notifications/cancelled` upstream), the
 * answer's size (`mcp.maxResultBytes`, refused while it streams) — and the
 * listings cut to `maxTools` and the schema bounds, cached per server.
 * Stdio servers start now; HTTP servers connect now, in the background.
 */
export function createMcpUpstreams(settings: McpSettings, deps: McpUpstreamsDeps): McpUpstreams {
  const now = deps.now ?? Date.now;
  const { log } = deps;
  const listeners = new Set<(server: string) => void>();
  const upstreams = new Map<string, Upstream>();
  const changed = (name: string) => {
    upstreams.get(name)?.listings.drop();
    log.info({ event: "mcp.list_changed", server: name });
    for (const listener of listeners) listener(name);
  };

  for (const [name, server] of Object.entries(settings.servers)) {
    const common = { server: name, maxResultBytes: settings.maxResultBytes, timeoutMs: server.timeoutMs, log, onListChanged: () => changed(name) };
    const link = server.http
      ? createHttpLink({ ...common, url: server.http.url, headers: serverHeaders(server.http, deps.env) })
      : server.stdio
        ? createStdioLink({
            ...common,
            command: server.stdio.command,
            args: server.stdio.args,
            env: serverEnvironment(server.stdio, deps.env),
            ...(server.stdio.cwd !== undefined ? { cwd: server.stdio.cwd } : {}),
            maxRestarts: server.stdio.maxRestarts,
            restartWindowMs: server.stdio.restartWindowMs,
            maxStderrBytesPerSecond: server.stdio.maxStderrBytesPerSecond,
            now,
          })
        : undefined;
    if (!link) continue;
    upstreams.set(name, { name, settings: server, link, breaker: createServerBreaker(now), listings: createListingCache(settings.listCacheMs, now) });
  }

  const find = (server: string): Upstream => {
    const upstream = upstreams.get(server);
    if (!upstream) throw new McpError(MCP_ERRORS.invalidParams, `unknown MCP server ${server}`);
    return upstream;
  };

  /** One request to `upstream`, under every guard (see above). */
  const request = async <T>(upstream: Upstream, options: Partial<UpstreamCallOptions>, send: (client: Client, requestOptions: RequestOptionsFor) => Promise<T>): Promise<T> => {
    const { name, settings: server, link, breaker } = upstream;
    if (breaker.open()) throw new McpError(MCP_ERRORS.upstreamFailed, `MCP server ${name} is failing; its breaker is open`, { server: name, breaker: "open" });
    const inner = new AbortController();
    const callerSignal = options.signal;
    const abort = () => inner.abort(callerSignal?.reason);
    if (callerSignal?.aborted) abort();
    callerSignal?.addEventListener("abort", abort, { once: true });
    let overflowRead: number | undefined;
    const context = {
      ...(options.bearer !== undefined ? { bearer: options.bearer } : {}),
      overflow: (read: number) => {
        overflowRead ??= read;
        inner.abort();
      },
    };
    // The cap on the whole call is ours, not the SDK's `maxTotalTimeout`: that one is only looked at when
    // progress arrives, and when it trips the SDK drops the request without telling the server. Aborting
    // sends `notifications/cancelled`.
    let pastTotal = false;
    const total = setTimeout(() => {
      pastTotal = true;
      inner.abort();
    }, clampDelay(server.maxTotalTimeoutMs));
    const onProgress = options.onProgress;
    const requestOptions: RequestOptionsFor = {
      signal: inner.signal,
      timeout: server.timeoutMs,
      resetTimeoutOnProgress: true,
      // Always asked for: progress is what extends the timeout, whether or not the caller follows it.
      onprogress: (progress) => onProgress?.(progress),
    };
    try {
      const result = await withCallContext(context, () =>
        link.run({ signal: inner.signal, timeoutMs: server.timeoutMs, ...(options.sessionId !== undefined ? { sessionId: options.sessionId } : {}) }, (client) => send(client, requestOptions)),
      );
      breaker.success();
      upstream.lastFailure = undefined;
      return result;
    } catch (error) {
      if (overflowRead !== undefined) throw tooLarge(name, settings.maxResultBytes, overflowRead);
      if (error instanceof SdkMcpError && error.code === STDIO_TOO_LARGE_CODE) throw tooLarge(name, settings.maxResultBytes, Number((error.data as { read?: unknown } | undefined)?.read ?? 0));
      if (callerSignal?.aborted) throw new McpError(MCP_ERRORS.upstreamFailed, `the call to MCP server ${name} was cancelled by the caller`, { server: name, canceled: true });
      const classified = pastTotal
        ? { error: new McpError(MCP_ERRORS.timeout, `MCP server ${name} did not finish within maxTotalTimeoutMs (${server.maxTotalTimeoutMs} ms)`, { server: name, setting: "maxTotalTimeoutMs" }), serverFailed: true }
        : classify(name, error, server.timeoutMs);
      if (classified.serverFailed) {
        breaker.failure();
        upstream.lastFailure = classified.error.message;
      } else breaker.success();
      throw classified.error;
    } finally {
      clearTimeout(total);
      callerSignal?.removeEventListener("abort", abort);
    }
  };
  const listingsOf = (upstream: Upstream, signal: AbortSignal): Promise<Listings> => {
    const shared = upstream.listings.get(() => loadListings(upstream));
    return whileNotAborted(shared, signal).catch((error: unknown) => {
      if (signal.aborted) throw new McpError(MCP_ERRORS.upstreamFailed, `the listing of MCP server ${upstream.name} was cancelled by the caller`, { server: upstream.name, canceled: true });
      throw error;
    });
  };

  const loadListings = async (upstream: Upstream): Promise<Listings> => {
    const page = async <T>(
      method: "tools/list" | "prompts/list" | "resources/list",
      pick: (client: Client, cursor: string | undefined, options: RequestOptionsFor) => Promise<{ items: T[]; next?: string }>,
    ): Promise<{ items: T[]; cut: boolean }> => {
      const items: T[] = [];
      let cursor: string | undefined;
      for (let pages = 0; pages < MAX_LIST_PAGES; pages++) {
        const got = await request(upstream, {}, (client, options) => pick(client, cursor, options)).catch((error: unknown) => {
          // A server without prompts or resources answers methodNotFound: an empty listing, not a failure.
          if (method !== "tools/list" && error instanceof McpError && error.code === MCP_ERRORS.methodNotFound) return { items: [] as T[] } as { items: T[]; next?: string };
          throw error;
        });
        items.push(...got.items);
        if (items.length > upstream.settings.maxTools) return { items: items.slice(0, upstream.settings.maxTools), cut: true };
        if (got.next === undefined) return { items, cut: false };
        cursor = got.next;
      }
      return { items, cut: true };
    };
    const params = (cursor: string | undefined) => (cursor !== undefined ? { cursor } : {});
    const tools = await page("tools/list", async (client, cursor, options) => {
      const result = await client.request({ method: "tools/list", params: params(cursor) }, ListToolsResultSchema, options);
      return { items: result.tools, ...(result.nextCursor !== undefined ? { next: result.nextCursor } : {}) };
    });
    const prompts = await page("prompts/list", async (client, cursor, options) => {
      const result = await client.request({ method: "prompts/list", params: params(cursor) }, ListPromptsResultSchema, options);
      return { items: result.prompts, ...(result.nextCursor !== undefined ? { next: result.nextCursor } : {}) };
    });
    const resources = await page("resources/list", async (client, cursor, options) => {
      const result = await client.request({ method: "resources/list", params: params(cursor) }, ListResourcesResultSchema, options);
      return { items: result.resources, ...(result.nextCursor !== undefined ? { next: result.nextCursor } : {}) };
    });
    const listings = cutListing(upstream.name, { tools, prompts, resources }, settings);
    const { leftOut } = listings;
    const key = JSON.stringify(leftOut);
    if ((leftOut.cutAtMaxTools || leftOut.schemaTooLarge + leftOut.schemaTooDeep + leftOut.badName > 0) && key !== upstream.leftOut) {
      log.warn({ event: "mcp.listing_bounded", server: upstream.name, ...leftOut, kept: listings.tools.length, settings: "maxTools, maxSchemaBytes, maxSchemaDepth" });
    }
    upstream.leftOut = key;
    return listings;
  };

  return {
    servers: [...upstreams.keys()],
    async tools(server, signal) {
      return (await listingsOf(find(server), signal)).tools;
    },
    async prompts(server, signal) {
      return (await listingsOf(find(server), signal)).prompts;
    },
    async resources(server, signal) {
      return (await listingsOf(find(server), signal)).resources;
    },
    callTool(server, tool, args, options) {
      return request(find(server), options, (client, requestOptions) => client.request({ method: "tools/call", params: { name: tool, arguments: args } }, CallToolResultSchema, requestOptions) as Promise<CallToolResult>);
    },
    getPrompt(server, prompt, args, options) {
      return request(find(server), options, (client, requestOptions): Promise<GetPromptResult> => client.request({ method: "prompts/get", params: { name: prompt, arguments: args } }, GetPromptResultSchema, requestOptions));
    },
    readResource(server, uri, options) {
      return request(find(server), options, (client, requestOptions): Promise<ReadResourceResult> => client.request({ method: "resources/read", params: { uri } }, ReadResourceResultSchema, requestOptions));
    },
    async openSessions(servers, signal) {
      const opened = await Promise.all(
        servers.map(async (name) => {
          const upstream = upstreams.get(name);
          if (!upstream?.link.openSession || upstream.breaker.open()) return undefined;
          const bounded = AbortSignal.any([signal, AbortSignal.timeout(upstream.settings.timeoutMs)]);
          try {
            return [name, await upstream.link.openSession(bounded, upstream.settings.timeoutMs)] as const;
          } catch (error) {
            log.warn({ event: "mcp.session_open_failed", server: name, error: classify(name, error, upstream.settings.timeoutMs).error.message });
            return undefined;
          }
        }),
      );
      return Object.fromEntries(opened.filter((entry) => entry !== undefined));
    },
    health() {
      const health: Record<string, ServerHealth> = {};
      for (const { name, link, breaker, listings, lastFailure } of upstreams.values()) {
        const lastError = lastFailure ?? link.lastError;
        const restarts = link.restarts;
        health[name] = {
          state: breaker.open() ? "breaker_open" : link.state(),
          transport: link.transport,
          tools: listings.peek()?.tools.length ?? 0,
          ...(lastError !== undefined ? { lastError } : {}),
          ...(restarts !== undefined ? { restarts } : {}),
        };
      }
      return health;
    },
    onListChanged(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      listeners.clear();
      await Promise.all([...upstreams.values()].map((u) => u.link.close()));
    },
  };
}

/** Pages of one listing read at most; a server whose cursor never ends is cut there. */
export const MAX_LIST_PAGES = 100;

type RequestOptionsFor = NonNullable<Parameters<Client["request"]>[2]>;
