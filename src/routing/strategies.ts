import type { ModelRoute, RouteTarget, Strategy } from "../config/config.js";
import type { TargetStats } from "./target-stats.js";

/**
 * The order in which a request tries an alias's targets. The first target
 * is where it goes; the rest are its failover order. Breakers are applied
 * after ordering (an open target is skipped, not reordered).
 */
export interface TargetOrder {
  order(route: ModelRoute): readonly RouteTarget[];
}

export interface StrategyOptions {
  readonly stats: TargetStats;
  /** [0, 1); injected so tests can pin choices. */
  readonly random?: () => number;
  /** Share of least-latency requests sent to a random target first, so that a recovered target is noticed. */
  readonly exploration?: number;
}

const blendedPrice = (t: RouteTarget) => (t.price ? t.price.inputPerMTok + t.price.outputPerMTok : Number.POSITIVE_INFINITY);

/** A stable sort: targets that compare equal keep their configured order. */
function sortBy(targets: readonly RouteTarget[], score: (t: RouteTarget) => number): RouteTarget[] {
  return targets
    .map((target, index) => ({ target, index, score: score(target) }))
    .sort((a, b) => a.score - b.score || a.index - b.index)
    .map((x) => x.target);
}

function moveToFront(targets: readonly RouteTarget[], first: RouteTarget): RouteTarget[] {
  return [first, ...targets.filter((t) => t !== first)];
}

/**
 * `priority`: as configured. `weighted`: smooth weighted round robin (each
 * target's share follows its weight, evenly interleaved, no randomness); the
 * rest by weight. `least-latency`: lowest smoothed time to first delta,
 * targets never measured first, and a small random share explores.
 * `least-busy`: fewest streams in flight. `cost`: cheapest blended price
 * (input + output per million tokens), unpriced targets last.
 */
export function createTargetOrder(options: StrategyOptions): TargetOrder {
  const random = options.random ?? Math.random;
  const exploration = options.exploration ?? 0.05;
  // Per route object, not per alias name: a reload makes new routes (their
  // targets may differ in number), and their rotation starts afresh.
  const current = new WeakMap<ModelRoute, number[]>();

  const weighted = (route: ModelRoute): RouteTarget[] => {
    const weights = route.targets.map((t) => t.weight);
    const total = weights.reduce((a, b) => a + b, 0);
    if (total === 0) return [...route.targets];
    const state = current.get(route) ?? weights.map(() => 0);
    let best = 0;
    for (let i = 0; i < state.length; i++) {
      state[i]! += weights[i]!;
      if (state[i]! > state[best]!) best = i;
    }
    state[best]! -= total;
    current.set(route, state);
    return moveToFront(
      sortBy(route.targets, (t) => -t.weight),
      route.targets[best]!,
    );
  };

  const orders: Record<Strategy, (route: ModelRoute) => readonly RouteTarget[]> = {
    priority: (route) => route.targets,
    weighted,
    "least-latency": (route) => {
      const byLatency = sortBy(route.targets, (t) => options.stats.ttftMs(t.key) ?? -1);
      if (route.targets.length > 1 && random() < exploration) return moveToFront(byLatency, route.targets[Math.floor(random() * route.targets.length)]!);
      return byLatency;
    },
    "least-busy": (route) => sortBy(route.targets, (t) => options.stats.inFlight(t.key)),
    cost: (route) => sortBy(route.targets, blendedPrice),
  };

  return { order: (route) => (route.targets.length === 1 ? route.targets : orders[route.strategy](route)) };
}
