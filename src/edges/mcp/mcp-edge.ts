import type { CallLayer } from "../../call/call-layer.js";
import { policyFor } from "../../compliance/pii-policy.js";
import type { Config } from "../../config/config.js";
import type { McpGrant } from "../../config/mcp-schema.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import type { AnyRequest, AnyResponse } from "../../http/node-http.js";
import type { BodyLimits } from "../../http/read-body.js";
import type { Logger } from "../../logging/logger.js";
import { canonicalArgumentsSha256 } from "../../mcp/accounting/canonical-arguments.js";
import { mcpCallerFor } from "../../mcp/caller.js";
import type { McpToolbox, McpUpstreams, ToolAccounting } from "../../mcp/contract.js";
import { toolGrants } from "../../mcp/grants.js";
import { narrowingFrom } from "../../mcp/narrowing.js";
import { type RecentToolCalls, withRecentCalls } from "../../mcp/recent-calls.js";
import { createSessionSealer } from "../../mcp/session-id.js";
import { mcpSessionSecret } from "../../mcp/session-secret.js";
import { createMcpToolbox } from "../../mcp/toolbox.js";
import { createMcpUpstreams } from "../../mcp/upstream/upstreams.js";
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
  /** Per-key tokens (mcp/credentials/), when a server has auth.mode per-key: each call's bearer. */
  readonly credentialFor?: (keyId: string | undefined, server: string) => Promise<string | undefined>;
  /** Where settled calls are also left for the console's MCP page. */
  readonly recent?: RecentToolCalls;
}

export interface McpEdge {
  readonly route: (req: AnyRequest, res: AnyResponse, exchange: Exchange) => Promise<void>;
  readonly upstreams: McpUpstreams;
  /** For the model-call tool loop too: the same checks in the same order. */
  readonly toolbox: McpToolbox;
  close(): Promise<void>;
}

/** Redis as the place replicas agree on the session secret: SET NX, then GET (mcp/session-secret.ts). */
/** The request's narrowing headers, when it sent any (a malformed one throws McpError invalidParams, status 400). */
function optionalNarrowing(req: AnyRequest): { readonly narrow?: McpGrant } {
  const narrow = narrowingFrom(req.headers as Readonly<Record<string, string | readonly string[] | undefined>>);
  return narrow ? { narrow } : {};
}

/**
 * The MCP gateway's parts joined for the `/mcp` edge: upstreams (started
 * now), grants, accounting on the tenancy's charge, the toolbox, the
 * session sealer (its secret: mcp/session-secret.ts) and the route.
 */
export async function createMcpEdge(parts: McpEdgeParts): Promise<McpEdge> {
  const settings = parts.config().mcp;
  const upstreams = createMcpUpstreams(settings, { log: parts.logger, env: parts.env });
  const toolbox = createMcpToolbox({
    settings,
    upstreams,
    grants: toolGrants,
    accounting: parts.recent ? withRecentCalls(parts.accounting, parts.recent) : parts.accounting,
    ...(parts.credentialFor ? { credentialFor: parts.credentialFor } : {}),
    piiPolicy: (caller) => policyFor(parts.config(), caller.principal, undefined),
    argumentsSha256: canonicalArgumentsSha256,
  });
  const secret = mcpSessionSecret({ env: parts.env, log: parts.logger, replicated: parts.tenancy.redis !== undefined });
  const httpServers = Object.entries(settings.servers).flatMap(([name, s]) => (s.http ? [name] : []));
  const route = createMcpRoute({
    identify: (credential, exchange) => parts.calls.identify(credential, "mcp", exchange.fields, exchange.remote),
    callerOf: (principal, req) =>
      // A team or business line that is gone refuses the key (mcp/caller.ts): its grants would otherwise lose a level and widen.
      mcpCallerFor(principal, parts.tenancy.hierarchy(), { ...optionalNarrowing(req) }),
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
