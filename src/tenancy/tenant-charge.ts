import { randomUUID } from "node:crypto";
import type { ModelRoute, RouteTarget } from "../config/config.js";
import type { CallRecordFacts } from "../core/call-summary.js";
import type { ChatRequest } from "../core/chat-request.js";
import { quoteClientValue } from "../core/client-text.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import type { TenancyObserver } from "../flow/observer.js";
import { type AdmitResult, type ParentLevel, type Quota, type SettleResult, subjectOf, type TenantLevel, type TenantStore } from "../store/tenant-store.js";
import { maxCostMicros } from "../usage/cost.js";
import { estimatedInputTokens } from "../usage/prompt-size.js";
import type { UsageMeter } from "../usage/usage-meter.js";
import { type UsageRecord, usageRecordOf } from "../usage/usage-record.js";
import { admitOnCurrentSettings } from "./admit-current.js";
import { type Hierarchy, parentsOf } from "./hierarchy.js";
import { mayUse, type Principal } from "./principal.js";
import { refusal } from "./refusal.js";

/**
 * Output tokens reserved when a request sets no max_tokens: what a typical
 * answer needs, not the model's maximum (a key's tokensPerMinute would
 * otherwise refuse every such request). The real count replaces it at the
 * end; clients that want a tight reservation set max_tokens.
 */
export const DEFAULT_RESERVED_OUTPUT_TOKENS = 1_024;

/**
 * The tenancy stage of one request (docs/tenancy.md): the allowlist when
 * opened, one store round trip at admission that checks every limit and
 * reserves tokens and the most the request can cost, and at the end,
 * whichever way it comes, one settle that replaces the reservations with
 * what was used and records the stream. The settle runs after the last
 * delta went out, off the client's path. Between the two, the replica's
 * heartbeat renews the stream's lease (ChargeDeps.leases).
 */
export interface TenantCharge {
  /** Checks and reserves; throws `rate_limited`, `budget_exceeded`, `unauthenticated` (revoked) or `store_unavailable`. */
  admit(route: ModelRoute): Promise<void>;
  /** The target whose first delta committed the request: its price settles the cost. */
  serving(target: RouteTarget): void;
  /** The stream ended (no reason: completed). Idempotent: the first end counts. */
  end(meter: ChargedUsage, reason?: GatewayError): void;
  /**
   * Once admitted under a key budget: what the request may spend (its
   * reservation plus what was left of the key's budget when it was
   * admitted) and the prompt estimate it was reserved with; undefined
   * without a key budget. The output guard cuts the answer past it.
   */
  allowance(): Allowance | undefined;
}

/** What one admitted request may spend, in micro-dollars, and its prompt as estimated at admission. */
export interface Allowance {
  readonly micros: number;
  readonly inputTokens: number;
}

/** A key, team or business line: its id (what is kept) and its name (what is said). */
export interface LevelIdentity {
  readonly id: string;
  readonly name: string;
}

/** What a settle reads of a request's usage: a stream's meter, or an embedding call's count. */
export type ChargedUsage = Pick<UsageMeter, "final" | "ttftMs">;

export interface ChargeDeps {
  readonly store: TenantStore;
  readonly observer?: TenancyObserver;
  /** Hands over a settle in flight (shutdown waits for them) and reports how it went. */
  readonly settled: (work: Promise<{ readonly record: UsageRecord; readonly result: SettleResult }>, requestId: string) => void;
  /** The HTTP status of a budget refusal (auth.budgetExceededStatus). */
  readonly budgetExceededStatus: 402 | 429;
  /** The teams and business lines in force, for the levels above the key. */
  readonly hierarchy: Hierarchy;
  /** This replica, named on every record (host/pid). */
  readonly replica?: string;
  /** A level's budget is full (spent or held): its 100 % alert (budget-alerts.ts). */
  readonly budgetFull?: (level: TenantLevel, ref: LevelIdentity) => void;
  /**
   * The replica's streams whose leases its heartbeat renews (tenancy.ts):
   * held from admission until the settle, for at most `untilMs` (epoch ms)
   * so a stream whose end never came is still released a lease later.
   */
  readonly leases?: { hold(admissionId: string, untilMs: number): void; drop(admissionId: string): void };
  /** Epoch ms, for `leases` (injected with the heartbeat's timers). */
  readonly now?: () => number;
  /**
   * The version of this replica's copy of runtime keys, teams and lines,
   * sent with each admission of a key that may depend on them; absent
   * without a shared store (the copy is the store's own).
   */
  readonly settingsVersion?: () => string | undefined;
  /** Re-reads the copy now and returns the key by hash as it is then (undefined: revoked). */
  readonly reread?: (sha256: string) => Promise<Principal | undefined>;
}

export interface ChargeInput {
  readonly principal: Principal;
  readonly request: ChatRequest;
  readonly requestId: string;
  /** Called with what is left of the key's limits, before the first delta or the refusal. */
  readonly onQuota?: (quota: Quota) => void;
  /** Cost-allocation tags kept for the record (tags.ts). */
  readonly tags?: Readonly<Record<string, string>>;
  /** The client's address, for the audit log's refusals. */
  readonly remote?: string;
  /** The call summary's record facts (cache hit, personal data found, context fit), read when the call settles. */
  readonly record?: CallRecordFacts;
}

/** Anonymous requests (authentication off): nothing to check, nothing to charge. */
export const NO_CHARGE: TenantCharge = Object.freeze({
  admit: () => Promise.resolve(),
  serving: () => undefined,
  end: () => undefined,
  allowance: () => undefined,
});

/** What one admission reserves: tokens where a level limits them (estimated input + max output), and the most the request can cost where one has a budget. */
function reservation(principal: Principal, parents: readonly ParentLevel[], request: ChatRequest, route: ModelRoute): { readonly tokens: number; readonly micros: number; readonly inputTokens: number } {
  const levels = [principal, ...parents];
  const limitsTokens = levels.some((l) => l.limits.tokensPerMinute !== undefined);
  const hasBudget = levels.some((l) => l.budget !== undefined);
  const inputTokens = limitsTokens || hasBudget ? estimatedInputTokens(request) : 0;
  const outputTokens = request.sampling.maxTokens ?? DEFAULT_RESERVED_OUTPUT_TOKENS;
  return { tokens: limitsTokens ? inputTokens + outputTokens : 0, micros: hasBudget ? maxCostMicros(inputTokens, outputTokens, route.targets) : 0, inputTokens };
}

/**
 * The longest a stream of `route` can run: every attempt is bounded by its
 * target's totalMs, and failover tries each target, twice at most with a
 * retry. Its lease is renewed no longer than this, so a stream whose end
 * the gateway never saw still frees its slot and reservation.
 */
export function longestRunMs(route: ModelRoute): number {
  return 2 * route.targets.reduce((sum, t) => sum + t.timeouts.totalMs, 0);
}

/** Opens the charge of one request; the allowlist is checked here, before the alias is looked up (a key learns nothing of aliases it may not use). */
export function openCharge(deps: ChargeDeps, input: ChargeInput): TenantCharge {
  const { request } = input;
  const alias = request.model;
  const remote = input.remote ? { remote: input.remote } : {};
  /** The key's settings and levels; read again when the store says the copy they came from is stale. */
  let principal = input.principal;
  // The name is for people (messages, records, metrics); what is counted is kept under the id, which no later key takes.
  let key = principal.name;
  let subject = subjectOf({ level: "key", id: principal.id });
  let parents: readonly ParentLevel[] = [];
  let team: ParentLevel | undefined;
  let businessLine: ParentLevel | undefined;
  const resolve = (p: Principal) => {
    principal = p;
    key = p.name;
    subject = subjectOf({ level: "key", id: p.id });
    if (!mayUse(p, alias)) {
      deps.observer?.tenantRefused?.({ key, keyId: p.id, alias, reason: "not_allowed", requestId: input.requestId, ...remote });
      throw new GatewayError("permission_denied", `key ${key} may not use model ${quoteClientValue(alias)}`, { field: "model" });
    }
    parents = parentsOf(p, deps.hierarchy);
    team = parents.find((l) => l.level === "team");
    businessLine = parents.find((l) => l.level === "business_line");
  };
  resolve(principal);
  const startedAt = performance.now();
  let state: "new" | "admitting" | "admitted" | "closed" = "new";
  let admission: { readonly id: string; readonly admittedAt: number; readonly shared: boolean; readonly tokens: number; readonly micros: number; readonly parentTokens: readonly number[] } | undefined;
  let target: RouteTarget | undefined;
  let pending: { readonly meter: ChargedUsage; readonly reason: GatewayError | undefined } | undefined;
  let allowance: Allowance | undefined;

  const settle = (meter: ChargedUsage, reason: GatewayError | undefined) => {
    state = "closed";
    const held = admission!;
    deps.leases?.drop(held.id);
    const durationMs = performance.now() - startedAt;
    const at = Date.now();
    const work = (async () => {
      const usage = await meter.final();
      const record = usageRecordOf({
        id: held.id,
        identity: {
          requestId: input.requestId,
          key: { id: principal.id, name: key },
          ...(team ? { team } : {}),
          ...(businessLine ? { businessLine } : {}),
          ...(input.tags ? { tags: input.tags } : {}),
          alias,
        },
        target,
        usage,
        ttftMs: meter.ttftMs,
        durationMs,
        failure: reason,
        call: input.record ?? {},
        at,
        ...(deps.replica === undefined ? {} : { replica: deps.replica }),
      });
      const result = await deps.store.settle({
        admissionId: held.id,
        key: subject,
        admittedAt: held.admittedAt,
        shared: held.shared,
        ...(principal.budget ? { budgetPeriod: principal.budget.period } : {}),
        reservedTokens: held.tokens,
        reservedMicros: held.micros,
        ...(parents.length > 0 ? { parents: parents.map((p, i) => ({ level: p.level, id: p.id, name: p.name, reservedTokens: held.parentTokens[i]! })) } : {}),
        record,
      });
      return { record, result };
    })();
    deps.settled(work, input.requestId);
  };

  return {
    async admit(route) {
      state = "admitting";
      const id = randomUUID();
      let plan: ReturnType<typeof reservation>;
      let result: AdmitResult;
      try {
        // A key whose settings, team or line may have been changed at run time is admitted on the settings Redis holds now.
        ({ result, reserved: plan } = await admitOnCurrentSettings(deps, {
          id,
          current: () => ({ principal, parents }),
          reserve: () => reservation(principal, parents, request, route),
          take: resolve,
        }));
      } catch (error) {
        state = "closed";
        if (error instanceof GatewayError && error.code === "permission_denied") throw error;
        deps.observer?.tenantRefused?.({ key, keyId: principal.id, alias, reason: "store_unavailable", requestId: input.requestId, ...remote });
        throw toGatewayError(error);
      }
      input.onQuota?.(result.quota);
      if (!result.ok) {
        state = "closed";
        const reason = result.reason === "stale" ? "store_unavailable" : result.reason;
        deps.observer?.tenantRefused?.({ key, keyId: principal.id, alias, reason, requestId: input.requestId, ...(reason === "revoked" ? {} : { level: result.level ?? "key" }), ...remote });
        // Full, not merely smaller than this one request: the budget is used up until its period renews.
        if (result.reason === "budget" && result.retryAfterMs !== undefined) deps.budgetFull?.(result.level ?? "key", result.level ? parents.find((p) => p.level === result.level)! : { id: principal.id, name: key });
        throw refusal(principal, parents, result, plan.tokens, plan.micros, deps.budgetExceededStatus);
      }
      const tokensAt = (l: { readonly limits: { readonly tokensPerMinute?: number } }) => (l.limits.tokensPerMinute !== undefined ? plan.tokens : 0);
      admission = { id, admittedAt: result.admittedAt, shared: result.shared, tokens: tokensAt(principal), micros: plan.micros, parentTokens: parents.map(tokensAt) };
      deps.leases?.hold(id, (deps.now ?? Date.now)() + longestRunMs(route));
      // The quota counts this reservation as used: what is left beyond it is the budget's rest.
      const keyBudget = result.quota.budget;
      if (principal.budget && keyBudget) allowance = { micros: plan.micros + Math.max(0, keyBudget.limitMicros - keyBudget.usedMicros), inputTokens: plan.inputTokens };
      state = "admitted";
      deps.observer?.tenantAdmitted?.({ key, alias, shared: result.shared });
      // The request ended while its admission was on its way: settle it now.
      if (pending) settle(pending.meter, pending.reason);
    },
    serving(t) {
      target = t;
    },
    allowance: () => allowance,
    end(meter, reason) {
      if (state === "admitting") pending ??= { meter, reason };
      else if (state === "admitted") settle(meter, reason);
      else state = "closed";
    },
  };
}
