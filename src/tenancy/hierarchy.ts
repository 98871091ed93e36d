import type { Config, LevelSettings, TeamSettings } from "../config/config.js";
import { GatewayError } from "../core/errors.js";
import type { ParentLevel } from "../store/tenant-store.js";
import type { Principal } from "./principal.js";

/**
 * Where a key's team and business line are looked up: the configuration
 * in force, then those created at run time (runtime ones never shadow a
 * configured name: the admin service refuses such a name).
 */
export interface Hierarchy {
  team(name: string): TeamSettings | undefined;
  businessLine(name: string): LevelSettings | undefined;
}

/** The configured teams and business lines, with `runtime` (the admin service's) behind them. */
export function configHierarchy(config: Config, runtime?: Hierarchy): Hierarchy {
  return {
    team: (name) => config.auth.teams.get(name) ?? runtime?.team(name),
    businessLine: (name) => config.auth.businessLines.get(name) ?? runtime?.businessLine(name),
  };
}

/**
 * The levels above a key that its requests count against: its team, then
 * the team's business line. A key whose team no longer exists is refused
 * rather than admitted on its own: it would escape the team's budget.
 */
export function parentsOf(principal: Principal, hierarchy: Hierarchy): readonly ParentLevel[] {
  if (principal.team === undefined) return [];
  const team = hierarchy.team(principal.team);
  if (!team) throw new GatewayError("permission_denied", `key ${principal.name} belongs to team ${principal.team}, which no longer exists; an operator must give the key a team`);
  const parents: ParentLevel[] = [{ level: "team", id: team.id, name: team.name, limits: team.limits, ...(team.budget ? { budget: team.budget } : {}) }];
  if (team.businessLine === undefined) return parents;
  const line = hierarchy.businessLine(team.businessLine);
  if (!line) throw new GatewayError("permission_denied", `team ${team.name} belongs to business line ${team.businessLine}, which no longer exists; an operator must give the team a business line`);
  parents.push({ level: "business_line", id: line.id, name: line.name, limits: line.limits, ...(line.budget ? { budget: line.budget } : {}) });
  return parents;
}
