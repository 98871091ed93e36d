import type { Capabilities } from "../config/capability-table.js";
import type { RouteTarget } from "../config/config.js";

/** An alias's capabilities over its targets: what some target can do, and what every target can. */
export interface AliasCapabilities {
  readonly anyTarget: Capabilities;
  readonly everyTarget: Capabilities;
}

const FLAGS = ["tools", "vision", "jsonSchema", "reasoning", "promptCaching"] as const;
const SIZES = ["contextWindow", "maxOutputTokens"] as const;

/**
 * The union and the intersection of `targets`' capabilities, keeping
 * unknown apart from no: a flag is known in the union when some target has
 * it or all lack it, and in the intersection when some target lacks it or
 * all have it; a size is the union's largest when every target knows it,
 * the intersection's smallest known.
 */
export function aliasCapabilities(targets: readonly RouteTarget[]): AliasCapabilities {
  const any: Record<string, boolean | number> = {};
  const every: Record<string, boolean | number> = {};
  const caps = targets.map((t) => t.capabilities ?? {});
  for (const flag of FLAGS) {
    const values = caps.map((c) => c[flag]);
    if (values.includes(true)) any[flag] = true;
    else if (values.every((v) => v === false)) any[flag] = false;
    if (values.includes(false)) every[flag] = false;
    else if (values.every((v) => v === true)) every[flag] = true;
  }
  for (const size of SIZES) {
    const known = caps.map((c) => c[size]).filter((v): v is number => v !== undefined);
    if (known.length === caps.length && known.length > 0) any[size] = Math.max(...known);
    if (known.length > 0) every[size] = Math.min(...known);
  }
  return { anyTarget: any as Capabilities, everyTarget: every as Capabilities };
}
