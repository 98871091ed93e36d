import { randomUUID } from "node:crypto";
import type { ModelRoute, RouteTarget } from "../config/config.js";
import type { ChatRequest } from "../core/chat-request.js";
import { quoteClientValue } from "../core/client-text.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import type { TenancyObserver } from "../flow/observer.js";
import { type AdmitResult, type ParentLevel, type Quota, type SettleResult, type StreamOutcome, subjectOf, type TenantLevel, type TenantStore, type UsageRecord } from "../store/tenant-store.js";
import { costMicros, maxCostMicros } from "../usage/cost.js";
import { estimatedInputTokens } from "../usage/prompt-size.js";
import type { UsageMeter } from "../usage/usage-meter.js";
import { type Hierarchy, parentsOf } from "./hierarchy.js";
import { mayUse, type Principal } from "./principal.js";
import { resetDuration, usdFromMicros } from "./quota-headers.js";

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
 * delta went out, off the client's path.
 */
export interface TenantCharge {
  /** Checks and reserves; throws `rate_limited`, `budget_exceeded`, `unauthenticated` (revoked) or `store_unavailable`. */
  admit(route: ModelRoute): Promise<void>;
  /** The target whose first delta committed the request: its price settles the cost. */
  serving(target: RouteTarget): void;
  /** The answer came from the response cache, sparing `savedMicros`; the record says so. */
  cached(hit: { readonly kind: "exact" | "semantic"; readonly savedMicros: number }): void;
  /** Personal data the request held, by detector (counts only): the record says so. */
  found(counts: Readonly<Record<string, number>>): void;
  /** How the conversation was fitted to the context window (`truncated=K`): the record says so. */
  fitted(context: string): void;
  /** The stream ended (no reason: completed). Idempotent: the first end counts. */
  end(meter: ChargedUsage, reason?: GatewayError): void;
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
}

export interface ChargeInput {
  readonly principal: Principal;
  readonly request: ChatRequest;
  readonly requestId: string;
  /** Called with what is left of the key's limits, before the first delta or the refusal. */
  readonly onQuota?: (quota: Quota) => void;
  /** Cost-allocation tags kept for the record (tags.ts). */
  readonly tags?: Readonly<Record<string, string>>;
}

/** Anonymous requests (authentication off): nothing to check, nothing to charge. */
export const NO_CHARGE: TenantCharge = Object.freeze({
  admit: () => Promise.resolve(),
  serving: () => undefined,
  cached: () => undefined,
  found: () => undefined,
  fitted: () => undefined,
  end: () => undefined,
});

const LEVEL_WORDS = { team: "team", business_line: "business line" } as const;

/**
 * A refusal by a team or business line. It names the level and its limit
 * but gives no figures: they are the sum of other keys' use, which this
 * key's holder has no business seeing.
 */
function parentRefusal(parent: ParentLevel, result: Extract<AdmitResult, { ok: false }>, budgetStatus: 402 | 429): GatewayError {
  const who = `${LEVEL_WORDS[parent.level]} ${parent.name}`;
  const retry = result.retryAfterMs === undefined ? {} : { retryAfterMs: result.retryAfterMs };
  const limits = parent.limits;
  switch (result.reason) {
    case "requests":
      return new GatewayError("rate_limited", `${who} is over its limit of ${limits.requestsPerMinute} requests per minute`, retry);
    case "streams":
      return new GatewayError("rate_limited", `${who} has all of its ${limits.concurrentStreams} concurrent streams in use`, retry);
    case "tokens":
      return result.retryAfterMs === undefined
        ? new GatewayError("rate_limited", `the request reserves more tokens (prompt estimate + max_tokens) than ${who}'s limit of ${limits.tokensPerMinute} tokens per minute; lower max_tokens`, { field: "sampling.max_tokens" })
        : new GatewayError("rate_limited", `${who} is over its limit of ${limits.tokensPerMinute} tokens per minute`, retry);
    default: {
      const budget = parent.budget!;
      const refused = { budget: { level: parent.level, httpStatus: budgetStatus, ...(result.retryAfterMs === undefined ? {} : { reset: resetDuration(result.retryAfterMs) }) } } as const;
      if (result.retryAfterMs === undefined) return new GatewayError("budget_exceeded", `the request could cost more than ${who}'s whole budget per ${budget.period}; lower max_tokens`, refused);
      return new GatewayError("budget_exceeded", `${who} has spent its budget for this ${budget.period} (it renews in ${resetDuration(result.retryAfterMs)})`, { ...retry, ...refused });
    }
  }
}

function refusal(principal: Principal, parents: readonly ParentLevel[], result: Extract<AdmitResult, { ok: false }>, reserved: number, reservedMicros: number, budgetStatus: 402 | 429): GatewayError {
  const parent = result.level === undefined ? undefined : parents.find((p) => p.level === result.level);
  if (parent && result.reason !== "revoked") return parentRefusal(parent, result, budgetStatus);
  const name = principal.name;
  const retry = result.retryAfterMs === undefined ? {} : { retryAfterMs: result.retryAfterMs };
  const limits = principal.limits;
  switch (result.reason) {
    case "revoked":
      return new GatewayError("unauthenticated", "invalid API key");
    case "requests":
      return new GatewayError("rate_limited", `key ${name} is over its limit of ${limits.requestsPerMinute} requests per minute`, retry);
    case "streams":
      return new GatewayError("rate_limited", `key ${name} has all of its ${limits.concurrentStreams} concurrent streams in use`, retry);
    case "tokens":
      return result.retryAfterMs === undefined
        ? new GatewayError(
            "rate_limited",
            `the request reserves ${reserved} tokens (prompt estimate + max_tokens), more than key ${name}'s limit of ${limits.tokensPerMinute} tokens per minute; lower max_tokens`,
            { field: "sampling.max_tokens" },
          )
        : new GatewayError("rate_limited", `key ${name} is over its limit of ${limits.tokensPerMinute} tokens per minute`, retry);
    case "budget": {
      const budget = principal.budget!;
      const whole = `${usdFromMicros(budget.usdMicros)} USD per ${budget.period}`;
      const refused = { budget: { level: "key", httpStatus: budgetStatus, ...(result.retryAfterMs === undefined ? {} : { reset: resetDuration(result.retryAfterMs) }) } } as const;
      if (result.retryAfterMs === undefined) return new GatewayError("budget_exceeded", `the request could cost more than key ${name}'s whole budget of ${whole}; lower max_tokens`, refused);
      return new GatewayError("budget_exceeded", `key ${name} cannot reserve ${usdFromMicros(reservedMicros)} USD for this request: ${budgetUse(result.quota, budget.usdMicros, budget.period)} (it renews in ${resetDuration(result.retryAfterMs)})`, { ...retry, ...refused });
    }
  }
}

/**
 * Where a key's budget went, spent and held apart: a refusal that said
 * "used" when most of it was only reserved by streams still running sent
 * people looking for spend that had not happened.
 */
function budgetUse(quota: Quota, limitMicros: number, period: string): string {
  const reserved = quota.budget?.reservedMicros ?? 0;
  const spent = Math.max(0, (quota.budget?.usedMicros ?? 0) - reserved);
  const held = reserved > 0 ? `, and streams in flight hold ${usdFromMicros(reserved)} USD more` : "";
  return `it has spent ${usdFromMicros(spent)} USD of its budget of ${usdFromMicros(limitMicros)} USD for this ${period}${held}`;
}

const outcomeOf = (reason: GatewayError | undefined): StreamOutcome => (reason === undefined ? "completed" : reason.code === "canceled" ? "canceled" : "failed");

/** Opens the charge of one request; the allowlist is checked here, before the alias is looked up (a key learns nothing of aliases it may not use). */
export function openCharge(deps: ChargeDeps, input: ChargeInput): TenantCharge {
  const { principal, request } = input;
  const alias = request.model;
  // The name is for people (messages, records, metrics); what is counted is kept under the id, which no later key takes.
  const key = principal.name;
  const subject = subjectOf({ level: "key", id: principal.id });
  if (!mayUse(principal, alias)) {
    deps.observer?.tenantRefused?.({ key, keyId: principal.id, alias, reason: "not_allowed", requestId: input.requestId });
    throw new GatewayError("permission_denied", `key ${key} may not use model ${quoteClientValue(alias)}`, { field: "model" });
  }
  const parents = parentsOf(principal, deps.hierarchy);
  const team = parents.find((p) => p.level === "team");
  const businessLine = parents.find((p) => p.level === "business_line");
  const startedAt = performance.now();
  let state: "new" | "admitting" | "admitted" | "closed" = "new";
  let admission: { readonly id: string; readonly admittedAt: number; readonly shared: boolean; readonly tokens: number; readonly micros: number; readonly parentTokens: readonly number[] } | undefined;
  let target: RouteTarget | undefined;
  let hit: { readonly kind: "exact" | "semantic"; readonly savedMicros: number } | undefined;
  let pii: Readonly<Record<string, number>> | undefined;
  let context: string | undefined;
  let pending: { readonly meter: ChargedUsage; readonly reason: GatewayError | undefined } | undefined;

  const settle = (meter: ChargedUsage, reason: GatewayError | undefined) => {
    state = "closed";
    const held = admission!;
    const durationMs = performance.now() - startedAt;
    const at = Date.now();
    const work = (async () => {
      const usage = await meter.final();
      const record: UsageRecord = {
        id: held.id,
        requestId: input.requestId,
        key,
        keyId: principal.id,
        ...(team === undefined ? {} : { team: team.name, teamId: team.id }),
        ...(businessLine === undefined ? {} : { businessLine: businessLine.name, businessLineId: businessLine.id }),
        ...(input.tags && Object.keys(input.tags).length > 0 ? { tags: input.tags } : {}),
        alias,
        target: target?.key ?? "",
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        cachedInputTokens: usage.cachedInputTokens,
        reasoningTokens: usage.reasoningTokens,
        costMicros: costMicros(usage, target?.price),
        estimated: usage.estimated,
        ...(meter.ttftMs === undefined ? {} : { ttftMs: meter.ttftMs }),
        durationMs,
        outcome: outcomeOf(reason),
        ...(reason ? { code: reason.code } : {}),
        ...(hit ? { cache: hit.kind, savedMicros: hit.savedMicros } : {}),
        ...(target?.local ? { local: true } : {}),
        ...(pii ? { pii } : {}),
        ...(context ? { context } : {}),
        at,
        ...(deps.replica === undefined ? {} : { replica: deps.replica }),
      };
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
      const { limits, budget } = principal;
      const levels = [principal, ...parents];
      const limitsTokens = levels.some((l) => l.limits.tokensPerMinute !== undefined);
      const hasBudget = levels.some((l) => l.budget !== undefined);
      const inputTokens = limitsTokens || hasBudget ? estimatedInputTokens(request) : 0;
      const outputTokens = request.sampling.maxTokens ?? DEFAULT_RESERVED_OUTPUT_TOKENS;
      const reserveTokens = limitsTokens ? inputTokens + outputTokens : 0;
      const reserveMicros = hasBudget ? maxCostMicros(inputTokens, outputTokens, route.targets) : 0;
      const tokensAt = (l: { readonly limits: { readonly tokensPerMinute?: number } }) => (l.limits.tokensPerMinute !== undefined ? reserveTokens : 0);
      const id = randomUUID();
      let result: AdmitResult;
      try {
        result = await deps.store.admit({
          key: subject,
          admissionId: id,
          limits,
          ...(budget ? { budget } : {}),
          ...(principal.source === "runtime" ? { runtimeSha256: principal.sha256 } : {}),
          reserveTokens,
          reserveMicros,
          ...(parents.length > 0 ? { parents } : {}),
        });
      } catch (error) {
        state = "closed";
        deps.observer?.tenantRefused?.({ key, keyId: principal.id, alias, reason: "store_unavailable", requestId: input.requestId });
        throw toGatewayError(error);
      }
      input.onQuota?.(result.quota);
      if (!result.ok) {
        state = "closed";
        deps.observer?.tenantRefused?.({ key, keyId: principal.id, alias, reason: result.reason, requestId: input.requestId, ...(result.reason === "revoked" ? {} : { level: result.level ?? "key" }) });
        // Full, not merely smaller than this one request: the budget is used up until its period renews.
        if (result.reason === "budget" && result.retryAfterMs !== undefined) deps.budgetFull?.(result.level ?? "key", result.level ? parents.find((p) => p.level === result.level)! : { id: principal.id, name: key });
        throw refusal(principal, parents, result, reserveTokens, reserveMicros, deps.budgetExceededStatus);
      }
      admission = { id, admittedAt: result.admittedAt, shared: result.shared, tokens: tokensAt(principal), micros: reserveMicros, parentTokens: parents.map(tokensAt) };
      state = "admitted";
      deps.observer?.tenantAdmitted?.({ key, alias, shared: result.shared });
      // The request ended while its admission was on its way: settle it now.
      if (pending) settle(pending.meter, pending.reason);
    },
    serving(t) {
      target = t;
    },
    cached(h) {
      hit = h;
    },
    found(counts) {
      pii = counts;
    },
    fitted(value) {
      context = value;
    },
    end(meter, reason) {
      if (state === "admitting") pending ??= { meter, reason };
      else if (state === "admitted") settle(meter, reason);
      else state = "closed";
    },
  };
}
