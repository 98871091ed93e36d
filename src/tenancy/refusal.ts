import { GatewayError } from "../core/errors.js";
import type { AdmitResult, ParentLevel, Quota } from "../store/tenant-store.js";
import type { Principal } from "./principal.js";
import { resetDuration, usdFromMicros } from "./quota-headers.js";

// What a refused admission says, level by level (docs/tenancy.md, "Teams and business lines", "Budgets and spend").

const LEVEL_WORDS = { team: "team", business_line: "business line" } as const;

/**
 * A refusal by a team or business line. It names the level and its limit
 * but gives no figures: they are the sum of other keys' use, which this
 * key's holder has no business seeing.
 */
function parentRefusal(parent: ParentLevel, result: Extract<AdmitResult, { ok: false }>, budgetStatus: 402 | 429, reservedMicros: number): GatewayError {
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
      return new GatewayError("budget_exceeded", `${who} ${budgetState(result, budget.usdMicros, budget.period, reservedMicros)} (it renews in ${resetDuration(result.retryAfterMs)})`, { ...retry, ...refused });
    }
  }
}

/**
 * Why a level above the key has no room, in words and without figures
 * (they are other keys' spend): spent, or held by streams still running
 * (which free what they do not use when they end), or too little left.
 */
export function budgetState(result: Extract<AdmitResult, { ok: false }>, limitMicros: number, period: string, requestMicros: number): string {
  const used = result.levelBudget?.usedMicros;
  const held = result.levelBudget?.reservedMicros ?? 0;
  if (used === undefined || used - held >= limitMicros) return `has spent its budget for this ${period}`;
  // Would it fit once every stream in flight ended? Then the streams hold what it needs; otherwise spend alone leaves too little.
  if (held > 0 && used - held + requestMicros <= limitMicros) {
    const spent = used - held > 0 ? "part of it is spent and " : "";
    return `has no room left in its budget for this ${period}: ${spent}streams in flight hold what this request would need (what they do not use comes back when they end)`;
  }
  return `has too little of its budget for this ${period} left for this request; lower max_tokens`;
}

export function refusal(principal: Principal, parents: readonly ParentLevel[], result: Extract<AdmitResult, { ok: false }>, reserved: number, reservedMicros: number, budgetStatus: 402 | 429): GatewayError {
  const parent = result.level === undefined ? undefined : parents.find((p) => p.level === result.level);
  if (parent && result.reason !== "revoked") return parentRefusal(parent, result, budgetStatus, reservedMicros);
  const name = principal.name;
  const retry = result.retryAfterMs === undefined ? {} : { retryAfterMs: result.retryAfterMs };
  const limits = principal.limits;
  switch (result.reason) {
    case "revoked":
      return new GatewayError("unauthenticated", "invalid API key");
    case "stale":
      return new GatewayError("store_unavailable", "the gateway's copy of this key's settings could not be brought up to date; retry shortly", retry);
    case "requests":
      return new GatewayError("rate_limited", `key ${name} is over its limit of ${limits.requestsPerMinute} requests per minute`, retry);
    case "streams":
      return new GatewayError("rate_limited", `key ${name} has all of its ${limits.concurrentStreams} concurrent streams in use`, retry);
    case "tokens":
      return result.retryAfterMs === undefined
        ? new GatewayError("rate_limited", `the request reserves ${reserved} tokens (prompt estimate + max_tokens), more than key ${name}'s limit of ${limits.tokensPerMinute} tokens per minute; lower max_tokens`, {
            field: "sampling.max_tokens",
          })
        : new GatewayError("rate_limited", `key ${name} is over its limit of ${limits.tokensPerMinute} tokens per minute`, retry);
    case "budget": {
      const budget = principal.budget!;
      const whole = `${usdFromMicros(budget.usdMicros)} USD per ${budget.period}`;
      const refused = { budget: { level: "key", httpStatus: budgetStatus, ...(result.retryAfterMs === undefined ? {} : { reset: resetDuration(result.retryAfterMs) }) } } as const;
      if (result.retryAfterMs === undefined) return new GatewayError("budget_exceeded", `the request could cost more than key ${name}'s whole budget of ${whole}; lower max_tokens`, refused);
      const use = result.local ? localBudgetUse(result.quota, budget.period) : budgetUse(result.levelBudget ?? result.quota.budget, budget.usdMicros, budget.period);
      return new GatewayError("budget_exceeded", `key ${name} cannot reserve ${usdFromMicros(reservedMicros)} USD for this request: ${use} (it renews in ${resetDuration(result.retryAfterMs)})`, { ...retry, ...refused });
    }
  }
}

/**
 * Where a key's budget went, spent and held apart: a refusal that said
 * "used" when most of it was only reserved by streams still running sent
 * people looking for spend that had not happened.
 */
function budgetUse(use: { readonly usedMicros: number; readonly reservedMicros: number } | undefined, limitMicros: number, period: string): string {
  const reserved = use?.reservedMicros ?? 0;
  const spent = Math.max(0, (use?.usedMicros ?? 0) - reserved);
  const held = reserved > 0 ? `, and streams in flight hold ${usdFromMicros(reserved)} USD more` : ", and no stream in flight holds any of it";
  return `it has spent ${usdFromMicros(spent)} USD of its budget of ${usdFromMicros(limitMicros)} USD for this ${period}${held}`;
}

/**
 * A refusal on this replica's share while the shared store is away: its
 * figures are the share's and this replica's alone, and say so (the
 * shared spend and the other replicas' streams are not known here).
 */
function localBudgetUse(quota: Quota, period: string): string {
  const limit = quota.budget?.limitMicros ?? 0;
  const reserved = quota.budget?.reservedMicros ?? 0;
  const spent = Math.max(0, (quota.budget?.usedMicros ?? 0) - reserved);
  return `the shared store is unreachable, and this replica's share of what is left of its budget for this ${period}, ${usdFromMicros(limit)} USD, is used: ${usdFromMicros(spent)} USD spent here and ${usdFromMicros(reserved)} USD held by streams in flight here`;
}
