import type { Config } from "../config/config.js";

/** A configured key whose spend is capped by a budget but which can reach targets that cost nothing. */
export interface UnpricedBudget {
  readonly key: string;
  /** Where the budget is: the key's own, its team's, its business line's. */
  readonly budgets: readonly string[];
  /** The aliases it may use that have a target without a price, each with those targets (`provider/model`). */
  readonly aliases: ReadonlyArray<{ readonly alias: string; readonly targets: readonly string[] }>;
}

/**
 * Configured keys with a budget (their own, their team's or their business
 * line's) that may use an alias with an unpriced target: a call served
 * there costs nothing, so the budget never moves and never refuses. Not an
 * error (a free local model is a fine target): check-config and start-up
 * say it, so nobody believes a budget is capping what it cannot see.
 */
export function unpricedBudgets(config: Config): UnpricedBudget[] {
  const unpriced = [...config.models.values()].map((route) => ({ alias: route.alias, targets: route.targets.filter((t) => t.price === undefined).map((t) => t.key) })).filter((a) => a.targets.length > 0);
  if (unpriced.length === 0) return [];
  const found: UnpricedBudget[] = [];
  for (const key of config.auth.keys) {
    const team = key.team === undefined ? undefined : config.auth.teams.get(key.team);
    const line = team?.businessLine === undefined ? undefined : config.auth.businessLines.get(team.businessLine);
    const budgets = [...(key.budget ? ["key"] : []), ...(team?.budget ? [`team ${team.name}`] : []), ...(line?.budget ? [`business line ${line.name}`] : [])];
    if (budgets.length === 0) continue;
    const aliases = unpriced.filter((a) => key.models === undefined || key.models.includes(a.alias));
    if (aliases.length > 0) found.push({ key: key.name, budgets, aliases });
  }
  return found;
}

/** One line per key, as check-config prints it. */
export function describeUnpriced(u: UnpricedBudget): string {
  const where = u.aliases.map((a) => `${a.alias} (${a.targets.join(", ")})`).join(", ");
  return `key ${u.key} has a budget (${u.budgets.join(", ")}) but may use aliases with unpriced targets: ${where}; calls served there cost nothing and never count against the budget (set price on those targets, or catalog: to a priced catalog entry)`;
}
