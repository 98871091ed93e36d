import { type Attempt, type AttemptDeps, type AttemptPlan, startAttempt } from "../attempt/attempt.js";
import type { ModelRoute, RouteTarget } from "../config/config.js";
import type { ContentDelta } from "../core/delta.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import { clampDelay, delay, systemTimers } from "../core/timers.js";
import type { AttemptInfo, AttemptObserver, AttemptOutcome, AttemptRecord, StreamObserver } from "../flow/observer.js";
import type { TargetStats } from "../routing/target-stats.js";
import type { BreakerPermit, Breakers } from "./circuit-breaker.js";
import { backoffMs, classify } from "./retry-policy.js";

/** Where a request's attempts go and what bounds them, whatever an attempt is (a stream's, an embedding call's). */
export interface RunOptions {
  readonly route: ModelRoute;
  /** The targets in the order this request tries them (the strategy's choice). */
  readonly order: readonly RouteTarget[];
  /** The request's signal: its abort ends every attempt at once. */
  readonly signal: AbortSignal;
  /** The client's deadline on the performance.now() clock, when it gave one. */
  readonly deadlineAt?: number;
  /** Where the request reports its attempts. */
  readonly observer: StreamObserver;
}

export interface AttemptsOptions extends RunOptions {
  readonly plan: Omit<AttemptPlan, "target">;
}

/** What the retry loop needs besides the attempts themselves. */
export interface RunDeps {
  readonly breakers: Breakers;
  readonly stats: TargetStats;
  readonly random: () => number;
}

export interface AttemptsDeps extends AttemptDeps, RunDeps {}

/**
 * What the retry loop needs of one attempt: where it goes, when it began,
 * the result that commits the request to it (a stream's first delta, an
 * embedding call's whole answer), and a way to stop it.
 */
export interface Trial<T> {
  readonly target: RouteTarget;
  /** performance.now() when the attempt began (before admission). */
  readonly startedAt: number;
  first(): Promise<T>;
  abort(reason: GatewayError): void;
}

/** Starts one attempt at `target`; it calls `ended` once it has let go of everything. */
export type StartTrial<A> = (target: RouteTarget, observer: AttemptObserver, ended: (target: RouteTarget) => void) => A;

/** The attempt whose result settled the request, that result, and every attempt's record. */
export interface Settled<T, A extends Trial<T>> {
  readonly attempt: A;
  readonly first: T;
  readonly records: readonly AttemptRecord[];
}

/** The attempt that produced the first delta, and that delta: from here on the request belongs to it. */
export type Committed = Settled<IteratorResult<ContentDelta, void>, Attempt>;

interface Running<T, A extends Trial<T>> {
  readonly attempt: A;
  readonly info: AttemptInfo;
  readonly permit: BreakerPermit;
  readonly result: Promise<{ readonly running: Running<T, A>; readonly first?: T; readonly error?: GatewayError }>;
}

const LOST_HEDGE = new GatewayError("canceled", "another attempt answered first");

/** The error a request gets when every attempt failed: each attempt listed, never a key. */
function exhausted(records: readonly AttemptRecord[], last: GatewayError): GatewayError {
  const failures = records.filter((r) => r.error);
  if (failures.length <= 1) return last;
  const lines = failures.map((r) => `${r.target.key}: ${r.error!.message} (${Math.round(r.ms)} ms)`);
  const delays = failures.map((r) => r.error!.retryAfterMs).filter((ms): ms is number => ms !== undefined);
  // The last failure decides the code: it is what the client would meet if it retried now.
  return new GatewayError(last.code, `all ${failures.length} attempts failed: ${lines.join("; ")}`, {
    ...(last.provider === undefined ? {} : { provider: last.provider }),
    ...(delays.length > 0 ? { retryAfterMs: Math.min(...delays) } : {}),
    ...(last.upstreamStatus === undefined ? {} : { upstreamStatus: last.upstreamStatus }),
    cause: last,
  });
}

/**
 * Runs attempts until one commits: its first delta, and only that, settles
 * the request on a target. Before it, a failure is retried or failed over
 * (docs/routing.md): untried targets first in the strategy's
 * order, then transient failures again after full-jitter backoff (never
 * before their Retry-After), skipping targets whose breaker is open, never
 * more than `retry.maxAttempts` attempts, and no new attempt without room in
 * the client's deadline for its headers timeout. With `hedge.afterMs`, a
 * second attempt starts when the first has produced nothing by then; the
 * first to produce a delta wins and the other is aborted at once. Never more
 * than two in flight.
 */
export function commitAttempt(options: AttemptsOptions, deps: AttemptsDeps): Promise<Committed> {
  return runAttempts<IteratorResult<ContentDelta, void>, Attempt>(options, deps, (target, observer, ended) => startAttempt({ ...options.plan, target, observer }, { ...deps, ended }, options.signal));
}

/**
 * The retry loop of commitAttempt for any kind of attempt: `start` makes
 * one, and the first of them whose `first()` resolves settles the request.
 */
export async function runAttempts<T, A extends Trial<T>>(options: RunOptions, deps: RunDeps, start: StartTrial<A>): Promise<Settled<T, A>> {
  const { route, order, signal } = options;
  const records: AttemptRecord[] = [];
  const tries = new Map<string, number>();
  const banned = new Set<string>();
  const notBefore = new Map<string, number>();
  const running = new Set<Running<T, A>>();
  let started = 0;
  let lastError: GatewayError | undefined;
  let blockedMs: number | undefined;

  const finish = (r: Running<T, A>, outcome: AttemptOutcome, error?: GatewayError) => {
    const record: AttemptRecord = { ...r.info, outcome, ms: performance.now() - r.attempt.startedAt, ...(error ? { error } : {}) };
    records.push(record);
    options.observer.attemptEnded(record);
  };

  const abandonAll = (reason: GatewayError, outcome: AttemptOutcome) => {
    for (const r of running) {
      r.attempt.abort(reason);
      r.permit.abandon();
      finish(r, outcome);
    }
    running.clear();
  };

  /** The next target to try and how long to wait first; undefined when none is left. */
  const pick = (): { target: RouteTarget; permit: BreakerPermit; delayMs: number } | undefined => {
    const busy = new Set([...running].map((r) => r.attempt.target.key));
    const now = performance.now();
    blockedMs = undefined;
    for (const pass of ["untried", "retry"] as const) {
      for (const target of order) {
        const count = tries.get(target.key) ?? 0;
        if (busy.has(target.key) || banned.has(target.key) || (pass === "untried") !== (count === 0)) continue;
        const breaker = deps.breakers.of(target);
        const permit = breaker.permit();
        if (!permit) {
          blockedMs = Math.min(blockedMs ?? Number.POSITIVE_INFINITY, breaker.retryInMs());
          continue;
        }
        const delayMs = pass === "untried" ? 0 : Math.max(backoffMs(count, route.retry, deps.random), (notBefore.get(target.key) ?? 0) - now);
        return { target, permit, delayMs };
      }
    }
    return undefined;
  };

  const launch = async (hedge: boolean): Promise<boolean> => {
    if (started >= route.retry.maxAttempts) return false;
    const next = pick();
    if (!next) return false;
    const { target, permit } = next;
    // A hedge exists to save time: it never waits for a backoff.
    if (hedge && next.delayMs > 0) {
      permit.abandon();
      return false;
    }
    if (started > 0 && options.deadlineAt !== undefined && options.deadlineAt - performance.now() < next.delayMs + target.timeouts.headersMs) {
      permit.abandon();
      return false;
    }
    // On the global timers like every other timer of the request, so that one clock (a test's) moves them all.
    if (next.delayMs > 0 && !(await delay(systemTimers, next.delayMs, signal))) {
      permit.abandon();
      throw toGatewayError(signal.reason);
    }
    const info: AttemptInfo = { alias: route.alias, target, index: started, hedge, retry: (tries.get(target.key) ?? 0) > 0 };
    started++;
    tries.set(target.key, (tries.get(target.key) ?? 0) + 1);
    deps.stats.begin(target.key);
    const observer = options.observer.attemptStarted(info);
    const attempt = start(target, observer, (t) => deps.stats.end(t.key));
    const entry: Running<T, A> = {
      attempt,
      info,
      permit,
      result: attempt.first().then(
        (first) => ({ running: entry, first }),
        (error: unknown) => ({ running: entry, error: toGatewayError(error) }),
      ),
    };
    running.add(entry);
    return true;
  };

  const aborted = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(toGatewayError(signal.reason));
    else signal.addEventListener("abort", () => reject(toGatewayError(signal.reason)), { once: true });
  });
  aborted.catch(() => undefined);

  try {
    if (!(await launch(false))) {
      throw new GatewayError("circuit_open", `every target of model ${route.alias} is failing; its circuit breakers are open`, {
        retryAfterMs: Math.ceil(blockedMs ?? 1000),
      });
    }
    while (running.size > 0) {
      const waits: Array<Promise<unknown>> = [...running].map((r) => r.result);
      let hedgeTimer: NodeJS.Timeout | undefined;
      if (route.hedge && running.size === 1 && started < route.retry.maxAttempts) {
        const only = [...running][0]!;
        const wait = Math.max(0, only.attempt.startedAt + route.hedge.afterMs - performance.now());
        waits.push(new Promise<"hedge">((resolve) => (hedgeTimer = setTimeout(resolve, clampDelay(wait), "hedge"))));
      }
      let settled: Awaited<Running<T, A>["result"]> | "hedge";
      try {
        settled = (await Promise.race([...waits, aborted])) as Awaited<Running<T, A>["result"]> | "hedge";
      } finally {
        clearTimeout(hedgeTimer);
      }
      if (settled === "hedge") {
        await launch(true);
        continue;
      }
      const { running: r, first, error } = settled;
      running.delete(r);
      if (!error) {
        r.permit.success();
        deps.stats.recordTtft(r.attempt.target.key, performance.now() - r.attempt.startedAt);
        finish(r, "committed");
        abandonAll(LOST_HEDGE, "lost_hedge");
        return { attempt: r.attempt, first: first as T, records };
      }
      const failure = error!;
      const rule = classify(failure);
      if (rule.breaker) r.permit.failure();
      else r.permit.abandon();
      finish(r, failure.code === "overloaded" ? "shed" : rule.kind === "fatal" && (failure.code === "canceled" || failure.code === "deadline_exceeded") ? "canceled" : "failed", failure);
      lastError = failure;
      if (rule.kind === "fatal") {
        abandonAll(failure, "canceled");
        throw failure;
      }
      if (rule.kind === "next") banned.add(r.attempt.target.key);
      if (failure.retryAfterMs !== undefined) notBefore.set(r.attempt.target.key, performance.now() + failure.retryAfterMs);
      if (running.size === 0) await launch(false);
    }
    throw exhausted(records, lastError!);
  } catch (error) {
    abandonAll(toGatewayError(error), "canceled");
    throw error;
  }
}
