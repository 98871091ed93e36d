import type { BreakerConfig } from "../config/settings.js";

export type BreakerState = "closed" | "open" | "half_open";

/**
 * Permission for one attempt to use a target, with how it ended. An
 * attempt that was abandoned (a lost hedge, a client that left) says so and
 * counts as neither success nor failure.
 */
export interface BreakerPermit {
  success(): void;
  failure(): void;
  abandon(): void;
}

/**
 * A circuit breaker for one target. `failures` failures within `windowMs`
 * with no success between them open it for `openMs`: requests skip the
 * target. Then one probe is let through (half-open): its success closes the
 * breaker, its failure opens it for another `openMs`. The clock is injected,
 * so tests move time instead of sleeping.
 */
export interface Breaker {
  state(): BreakerState;
  /** A permit to send, or undefined when the breaker is open or its one probe is already out. */
  permit(): BreakerPermit | undefined;
  /** Milliseconds until the breaker lets a probe through (0 when it would now). */
  retryInMs(): number;
  /**
   * New settings from a configuration reload, on this same breaker: its
   * state and the failures it has counted are kept, the new `failures` and
   * `windowMs` judge the next outcome, and an open breaker's `openMs` is the
   * new one, counted from when it opened.
   */
  configure(config: BreakerConfig): void;
}

export function createBreaker(initial: BreakerConfig, now: () => number, onChange?: (state: BreakerState) => void): Breaker {
  let config = initial;
  let failures: number[] = [];
  let openedAt: number | undefined;
  let probeOut = false;

  const state = (): BreakerState => {
    if (openedAt === undefined) return "closed";
    return now() - openedAt >= config.openMs ? "half_open" : "open";
  };
  const set = (next: () => void) => {
    const before = state();
    next();
    const after = state();
    if (after !== before) onChange?.(after);
  };
  const open = () => {
    openedAt = now();
    failures = [];
  };

  return {
    state,
    configure(next) {
      set(() => {
        config = next;
      });
    },
    retryInMs() {
      if (openedAt === undefined) return 0;
      return Math.max(0, openedAt + config.openMs - now());
    },
    permit() {
      const current = state();
      if (current === "open") return undefined;
      const probe = current === "half_open";
      if (probe) {
        if (probeOut) return undefined;
        probeOut = true;
      }
      let settled = false;
      const settle = (f: () => void) => {
        if (settled) return;
        settled = true;
        if (probe) probeOut = false;
        set(f);
      };
      return {
        success: () =>
          settle(() => {
            failures = [];
            openedAt = undefined;
          }),
        failure: () =>
          settle(() => {
            if (probe) return open();
            const t = now();
            failures = failures.filter((at) => t - at < config.windowMs);
            failures.push(t);
            if (failures.length >= config.failures) open();
          }),
        abandon: () => settle(() => undefined),
      };
    },
  };
}

/**
 * The breakers of every target, by target key (`provider/model`), made on
 * first use, for the life of the process: a target keeps its breaker state
 * across reloads.
 */
export interface Breakers {
  of(target: { readonly key: string; readonly provider: { readonly name: string; readonly breaker: BreakerConfig } }): Breaker;
  /**
   * The providers of a new configuration: each existing breaker takes its
   * provider's settings, and breakers made from now on start with them, even
   * when a request still running on the previous configuration makes one.
   */
  configure(providers: ReadonlyMap<string, { readonly breaker: BreakerConfig }>): void;
  states(): ReadonlyMap<string, BreakerState>;
}

export function createBreakers(now: () => number = () => performance.now(), onChange?: (key: string, state: BreakerState) => void): Breakers {
  const breakers = new Map<string, { readonly breaker: Breaker; readonly provider: string }>();
  let latest: ReadonlyMap<string, { readonly breaker: BreakerConfig }> = new Map();
  return {
    of(target) {
      let entry = breakers.get(target.key);
      if (!entry) {
        const config = latest.get(target.provider.name)?.breaker ?? target.provider.breaker;
        entry = { breaker: createBreaker(config, now, onChange && ((state) => onChange(target.key, state))), provider: target.provider.name };
        breakers.set(target.key, entry);
      }
      return entry.breaker;
    },
    configure(providers) {
      latest = providers;
      for (const { breaker, provider } of breakers.values()) {
        const config = providers.get(provider)?.breaker;
        if (config) breaker.configure(config);
      }
    },
    states: () => new Map([...breakers].map(([key, { breaker }]) => [key, breaker.state()])),
  };
}
