import type { IncomingMessage, ServerResponse } from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf } from "../../http/node-http.js";
import { type BodyLimits, readBody } from "../../http/read-body.js";
import { parseJsonBody } from "../../http/read-json.js";
import type { McpCaller, McpToolbox, McpUpstreams } from "../../mcp/contract.js";
import type { McpSession, SessionSealer } from "../../mcp/session-id.js";
import type { Principal } from "../../tenancy/principal.js";
import type { InFlight } from "./in-flight.js";
import { sendCallerRefusal, sendGatewayRpcError, sendRpcError, TRANSPORT_ERRORS } from "./mcp-errors.js";
import { mcpServerFor } from "./mcp-server.js";

const SESSION_HEADER = "mcp-session-id";

/** What the `/mcp` edge is built from. */
export interface McpRouteOptions {
  /** The call layer's identify: the same virtual keys as every edge. */
  readonly identify: (credential: string | undefined, exchange: Exchange) => Promise<Principal | undefined>;
  /** The caller for a key and this request's headers (its team and business line as configured now, the narrowing headers). */
  /** Throws McpError for a malformed narrowing header or a key whose team is gone. */
  readonly callerOf: (principal: Principal | undefined, req: AnyRequest) => Omit<McpCaller, "upstreamSessions">;
  /** The servers a new session opens upstream sessions with: the caller's granted HTTP servers. */
  readonly sessionServers: (caller: McpCaller) => readonly string[];
  readonly toolbox: McpToolbox;
  readonly upstreams: Pick<McpUpstreams, "openSessions">;
  readonly sealer: SessionSealer;
  readonly inFlight: InFlight;
  readonly limits: BodyLimits & StructureLimits;
  /** True while the gateway drains: new sessions are refused, running ones finish. */
  readonly draining: () => boolean;
  readonly now?: () => number;
}

interface RpcMessage {
  readonly method?: unknown;
  readonly id?: unknown;
  readonly params?: { readonly protocolVersion?: unknown; readonly requestId?: unknown };
}

/** `x-api-key` as a bearer credential (what some MCP clients' header settings send), else `authorization` as it came. */
function credentialOf(req: AnyRequest): string | undefined {
  const apiKey = headerOf(req, "x-api-key");
  return apiKey !== undefined ? `Bearer ${apiKey}` : headerOf(req, "authorization");
}

const isId = (id: unknown): id is string | number => typeof id === "string" || typeof id === "number";

/**
 * `/mcp`: MCP streamable HTTP (docs/mcp.md). Each request is authenticated
 * with the caller's virtual key (never forwarded upstream), its body bounded
 * by `limits.maxRequestBytes` before parsing, and served by the official
 * SDK's `Server` over a stateless `StreamableHTTPServerTransport` built for
 * it; sessions are the gateway's own around it: `initialize` opens the
 * upstream sessions and answers a sealed `Mcp-Session-Id` (mcp/session-id.ts)
 * that any replica opens, so no table is shared and no routing is sticky.
 * GET (a server-initiated stream) is 405: the gateway sends nothing outside
 * a request's own stream. DELETE checks the session and ends the caller's
 * use of it.
 */
export function createMcpRoute(options: McpRouteOptions): (req: AnyRequest, res: AnyResponse, exchange: Exchange) => Promise<void> {
  const now = options.now ?? Date.now;

  /** The session a request names: undefined with no header; null when it is not one this gateway issued for this key (404). */
  const sessionOf = (req: AnyRequest, principal: Principal | undefined): { readonly id: string; readonly session: McpSession } | undefined | null => {
    const id = headerOf(req, SESSION_HEADER);
    if (id === undefined) return undefined;
    const session = options.sealer.open(id, principal?.id ?? "");
    return session ? { id, session } : null;
  };

  const post = async (req: AnyRequest, res: AnyResponse, exchange: Exchange, principal: Principal | undefined): Promise<void> => {
    let body: unknown;
    try {
      body = parseJsonBody(await readBody(req, options.limits), options.limits);
    } catch (error) {
      return sendGatewayRpcError(res, exchange, error);
    }
    const messages: RpcMessage[] = (Array.isArray(body) ? body : [body]).filter((m): m is RpcMessage => m !== null && typeof m === "object");
    const initialize = !Array.isArray(body) && messages[0]?.method === "initialize";
    let base: Omit<McpCaller, "upstreamSessions">;
    try {
      base = options.callerOf(principal, req);
    } catch (error) {
      return sendCallerRefusal(res, exchange, error);
    }
    let caller: McpCaller = base;
    let sessionId: string;
    if (initialize) {
      if (options.draining()) return sendRpcError(res, exchange, 503, TRANSPORT_ERRORS.badRequest, "the gateway is shutting down: open the session on another replica", { "retry-after": "1" });
      const asked = messages[0]?.params?.protocolVersion;
      const protocolVersion = typeof asked === "string" && SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_PROTOCOL_VERSION;
      const opening = new AbortController();
      res.once("close", () => opening.abort());
      const upstream = await options.upstreams.openSessions(options.sessionServers(base), opening.signal).catch(() => ({}));
      sessionId = options.sealer.seal({ keyId: principal?.id ?? "", protocolVersion, upstream, issuedAt: now() });
      res.setHeader(SESSION_HEADER, sessionId);
    } else {
      const found = sessionOf(req, principal);
      if (found === undefined) return sendRpcError(res, exchange, 400, TRANSPORT_ERRORS.badRequest, "Bad Request: Mcp-Session-Id header is required");
      // Another key's, altered, or expired: the spec's 404, on which the client starts a new session.
      if (found === null) return sendRpcError(res, exchange, 404, TRANSPORT_ERRORS.sessionNotFound, "Session not found");
      sessionId = found.id;
      caller = { ...base, upstreamSessions: found.session.upstream };
      for (const m of messages) if (m.method === "notifications/cancelled" && isId(m.params?.requestId)) options.inFlight.cancel(sessionId, m.params.requestId);
    }
    exchange.code = "ok";
    const cancel = new AbortController();
    const ids = messages.filter((m) => typeof m.method === "string" && isId(m.id)).map((m) => m.id as string | number);
    const forget = options.inFlight.add(sessionId, ids, cancel);
    // The client closing the request before its answer ends the call upstream too.
    res.once("close", () => {
      forget();
      if (!res.writableFinished) cancel.abort();
    });
    const server = mcpServerFor(caller, options.toolbox, cancel.signal);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    try {
      await server.connect(transport);
      await transport.handleRequest(req as IncomingMessage, res as ServerResponse, body);
    } finally {
      if (res.writableFinished || res.destroyed) void server.close().catch(() => {});
      else res.once("close", () => void server.close().catch(() => {}));
    }
  };

  return async (req, res, exchange) => {
    exchange.edge = "mcp";
    let principal: Principal | undefined;
    try {
      principal = await options.identify(credentialOf(req), exchange);
    } catch (error) {
      return sendGatewayRpcError(res, exchange, error);
    }
    if (req.method === "POST") return post(req, res, exchange, principal);
    if (req.method === "DELETE") {
      const found = sessionOf(req, principal);
      if (found === undefined) return sendRpcError(res, exchange, 400, TRANSPORT_ERRORS.badRequest, "Bad Request: Mcp-Session-Id header is required");
      if (found === null) return sendRpcError(res, exchange, 404, TRANSPORT_ERRORS.sessionNotFound, "Session not found");
      exchange.code = "ok";
      res.writeHead(200).end();
      return;
    }
    sendRpcError(res, exchange, 405, TRANSPORT_ERRORS.badRequest, "Method not allowed: the gateway sends nothing outside a request's own stream", { allow: "POST, DELETE" });
  };
}
