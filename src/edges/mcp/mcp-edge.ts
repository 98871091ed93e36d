import type { CallLayer } from "../../call/call-layer.js";
import { policyFor } from "../../compliance/pii-policy.js";
import type { Config } from "../../config/config.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import type { AnyRequest, AnyResponse } from "../../http/node-http.js";
import type { BodyLimits } from "../../http/read-body.js";
import type { Logger } from "../../logging/logger.js";
import { canonicalArgumentsSha256 } from "../../mcp/accounting/canonical-arguments.js";
import { mcpCallerFor } from "../../mcp/caller.js";
import type { McpCaller, McpToolbox, McpUpstreams, ToolAccounting } from "../../mcp/contract.js";
import { toolGrants } from "../../mcp/grants.js";
import { narrowingFrom } from "../../mcp/narrowing.js";
import { createSessionSealer } from "../../mcp/session-id.js";
import { mcpSessionSecret, type SharedSecretStore } from "../../mcp/session-secret.js";
import { createMcpToolbox } from "../../mcp/toolbox.js";
import { createMcpUpstreams } from "../../mcp/upstream/upstreams.js";
import type { SluiceRedisClient } from "../../store/redis-connection.js";
import type { Tenancy } from "../../tenancy/tenancy.js";
import { createInFlight } from "./in-flight.js";
import { createMcpRoute } from "./mcp-route.js";

/** What the gateway gives the MCP edge at start (app.ts). */
export interface McpEdgeParts {
  /** The configuration in force now: grants and PII policies are read per request, so a change applies from the next call. */
  readonly config: () => Config;
  readonly calls: Pick<CallLayer, "identify">;
  readonly tenancy: Pick<Tenancy, "hierarchy" | "redis">;
  /** The gateway's one tool accounting (app.ts builds it for every way a tool is called). */
  readonly accounting: ToolAccounting;
  readonly logger: Logger;
  readonly limits: BodyLimits & StructureLimits;
  readonly draining: () => boolean;
  readonly env: NodeJS.ProcessEnv;
}

export interface McpEdge {
  readonly route: (req: AnyRequest, res: AnyResponse, exchange: Exchange) => Promise<void>;
  readonly upstreams: McpUpstreams;
  /** For the model-call tool loop too: the same checks in the same order. */
  readonly toolbox: McpToolbox;
  close(): Promise<void>;
}

/** Redis as the place replicas agree on the session secret: SET NX, then GET (mcp/session-secret.ts). */
function redisSecretStore(redis: { readonly client: SluiceRedisClient; readonly prefix: string }): SharedSecretStore {
  return {
    async getOrSet(name, candidate) {
      const key = `${redis.prefix}${name}`;
      await redis.client.set(key, candidate, "NX");
      return (await redis.client.get(key)) ?? candidate;
    },
  };
}

/**
 * The MCP gateway's parts joined for the `/mcp` edge: upstreams (started
 * now), grants, accounting on the tenancy's charge, the toolbox, the
 * session sealer (its secret: mcp/session-secret.ts, with Redis as the
 * shared store when the gateway has one) and the route.
 */
export async function createMcpEdge(parts: McpEdgeParts): Promise<McpEdge> {
  const settings = parts.config().mcp;
  const upstreams = createMcpUpstreams(settings, { log: parts.logger, env: parts.env });
  const toolbox = createMcpToolbox({
    settings,
    upstreams,
    grants: toolGrants,
    accounting: parts.accounting,
    piiPolicy: (caller) => policyFor(parts.config(), caller.principal, undefined),
    argumentsSha256: canonicalArgumentsSha256,
  });
  const redis = parts.tenancy.redis;
  const secret = await mcpSessionSecret({ env: parts.env, log: parts.logger, ...(redis ? { shared: redisSecretStore(redis) } : {}) });
  const httpServers = Object.entries(settings.servers).flatMap(([name, s]) => (s.http ? [name] : []));
  const route = createMcpRoute({
    identify: (credential, exchange) => parts.calls.identify(credential, "mcp", exchange.fields, exchange.remote),
    callerOf(principal, req): McpCaller {
      const narrow = narrowingFrom(req.headers as Readonly<Record<string, string | readonly string[] | undefined>>);
      return mcpCallerFor(principal, parts.tenancy.hierarchy(), narrow ? { narrow } : {});
    },
    sessionServers: (caller) => {
      const grants = toolGrants(caller);
      return httpServers.filter((s) => grants.server(s));
    },
    toolbox,
    upstreams,
    sealer: createSessionSealer(secret, settings.sessionTtlMs),
    inFlight: createInFlight(),
    limits: parts.limits,
    draining: parts.draining,
  });
  return { route, upstreams, toolbox, close: () => upstreams.close() };
}
