import type { McpGrant } from "../config/mcp-schema.js";
import type { Hierarchy } from "../tenancy/hierarchy.js";
import type { Principal } from "../tenancy/principal.js";
import { MCP_ERRORS, type McpCaller, McpError } from "./contract.js";

/**
 * Who asks, with the levels above it as they are in force now: the key as
 * its edge identified it (`Tenancy.identify`), its team and the team's
 * business line from `Tenancy.hierarchy()`, the configured and the runtime
 * ones alike, so that their grants are read wherever they were written.
 * A key whose team (or a team whose business line) no longer exists is
 * refused, as its admission would be (tenancy/hierarchy.ts): its grants
 * would otherwise lose a level and widen.
 */
export function mcpCallerFor(principal: Principal | undefined, hierarchy: Hierarchy, extra: { readonly narrow?: McpGrant; readonly upstreamSessions?: Readonly<Record<string, string>> } = {}): McpCaller {
  const base = { ...(extra.narrow ? { narrow: extra.narrow } : {}), ...(extra.upstreamSessions ? { upstreamSessions: extra.upstreamSessions } : {}) };
  if (!principal) return base;
  if (principal.team === undefined) return { principal, ...base };
  const team = hierarchy.team(principal.team);
  if (!team) throw new McpError(MCP_ERRORS.refused, `key ${principal.name} belongs to team ${principal.team}, which no longer exists; an operator must give the key a team`, { status: 403 });
  if (team.businessLine === undefined) return { principal, team, ...base };
  const businessLine = hierarchy.businessLine(team.businessLine);
  if (!businessLine) throw new McpError(MCP_ERRORS.refused, `team ${team.name} belongs to business line ${team.businessLine}, which no longer exists; an operator must give the team a business line`, { status: 403 });
  return { principal, team, businessLine, ...base };
}
