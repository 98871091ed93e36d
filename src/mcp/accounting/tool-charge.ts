import { randomUUID } from "node:crypto";
import { GatewayError, toGatewayError } from "../../core/errors.js";
import type { TenancyObserver } from "../../flow/observer.js";
import { type AdmitResult, type ParentLevel, type SettleResult, subjectOf } from "../../store/tenant-store.js";
import { admitOnCurrentSettings } from "../../tenancy/admit-current.js";
import { parentsOf } from "../../tenancy/hierarchy.js";
import type { Principal } from "../../tenancy/principal.js";
import { refusal } from "../../tenancy/refusal.js";
import type { ChargeDeps } from "../../tenancy/tenant-charge.js";
import type { UsageRecord } from "../../usage/usage-record.js";
import type { McpError } from "../contract.js";
import { toolRefusal } from "./tool-refusal.js";

type RefusedReason = Parameters<NonNullable<TenancyObserver["tenantRefused"]>>[0]["reason"];

/** A tool call admitted under a key: what its settle gives back and counts. */
export interface ToolAdmission {
  readonly id: string;
  readonly principal: Principal;
  readonly parents: readonly ParentLevel[];
  readonly admittedAt: number;
  readonly shared: boolean;
  readonly reservedMicros: number;
}

/** A refused admission: the caller's error, and what the refusal said for metrics and the span. */
export class ToolRefused extends Error {
  constructor(readonly error: McpError) {
    super(error.message);
  }
}

/** The USD price as pico-dollars, exact to the pico (the ledger's exact cost), and as micro-dollars rounded up (what budgets count). */
export function priceOf(priceUsd: number): { readonly picos: number; readonly micros: number } {
  const picos = Number.isFinite(priceUsd) && priceUsd > 0 ? Math.round(priceUsd * 1e12) : 0;
  return { picos, micros: Math.ceil(picos / 1e6) };
}

/**
 * Admits one tool call under the key, its team and business line, in the
 * same single store round trip a model request takes (tenant-charge.ts):
 * every request limit checked and counted (a tool call is a request, and
 * holds a concurrent-stream slot while it runs), and the call's price
 * reserved against each level that has a budget. No tokens are reserved.
 * A refusal is told to the tenancy observer as a model refusal is (the
 * ledger's refusal counts, the audit log, metrics) and thrown as
 * ToolRefused. `longestMs`: how long this replica renews the admission's
 * lease while the call runs.
 */
export async function admitTool(deps: ChargeDeps, input: { readonly principal: Principal; readonly tool: string; readonly micros: number; readonly longestMs: number }): Promise<ToolAdmission> {
  let principal = input.principal;
  let parents: readonly ParentLevel[];
  const refused = (reason: RefusedReason, level?: string) => deps.observer?.tenantRefused?.({ key: principal.name, keyId: principal.id, alias: input.tool, reason, ...(level ? { level } : {}) });
  try {
    parents = parentsOf(principal, deps.hierarchy);
  } catch (error) {
    refused("not_allowed");
    throw new ToolRefused(toolRefusal(toGatewayError(error)));
  }
  const id = randomUUID();
  let reserve = 0;
  let result: AdmitResult;
  try {
    ({
      result,
      reserved: { micros: reserve },
    } = await admitOnCurrentSettings(deps, {
      id,
      current: () => ({ principal, parents }),
      reserve: () => ({ tokens: 0, micros: [principal, ...parents].some((l) => l.budget !== undefined) ? input.micros : 0 }),
      take: (fresh) => {
        principal = fresh;
        parents = parentsOf(fresh, deps.hierarchy);
      },
    }));
  } catch (error) {
    refused("store_unavailable");
    const cause = toGatewayError(error);
    throw new ToolRefused(toolRefusal(cause.code === "internal" ? new GatewayError("store_unavailable", "the gateway's store is unavailable; retry shortly", { retryAfterMs: 1_000 }) : cause));
  }
  if (!result.ok) {
    const reason = result.reason === "stale" ? "store_unavailable" : result.reason;
    refused(reason, reason === "revoked" ? undefined : (result.level ?? "key"));
    if (result.reason === "budget" && result.retryAfterMs !== undefined) deps.budgetFull?.(result.level ?? "key", result.level ? parents.find((p) => p.level === result.level)! : { id: principal.id, name: principal.name });
    throw new ToolRefused(toolRefusal(refusal(principal, parents, result, 0, reserve, deps.budgetExceededStatus), result));
  }
  deps.leases?.hold(id, (deps.now ?? Date.now)() + input.longestMs);
  return { id, principal, parents, admittedAt: result.admittedAt, shared: result.shared, reservedMicros: reserve };
}

/** Frees an admission whose call never went out (the caller left while it was admitted): nothing is charged or recorded. */
export function releaseTool(deps: ChargeDeps, admission: ToolAdmission): void {
  deps.leases?.drop(admission.id);
  void deps.store.release({ key: subjectOf({ level: "key", id: admission.principal.id }), admissionId: admission.id, ...(admission.parents.length > 0 ? { parents: admission.parents } : {}) }).catch(() => undefined);
}

/** The subject anonymous tool calls (authentication off) are recorded under: no key's, and never a key id (ids are hex). */
const ANONYMOUS = subjectOf({ level: "key", id: "anonymous" });

/**
 * Settles a tool call through the store, as a model call is settled: the
 * reservation replaced by what the call cost, its record into the usage
 * stream (with Redis; buffered while Redis is away) or to this replica's
 * ledger buffer, handed to `deps.settled` (shutdown waits for it). Without
 * an admission (authentication off) only the record is kept.
 */
export function settleTool(deps: ChargeDeps, admission: ToolAdmission | undefined, record: UsageRecord): void {
  const work = (async (): Promise<{ readonly record: UsageRecord; readonly result: SettleResult }> => {
    if (admission) deps.leases?.drop(admission.id);
    const result = await deps.store.settle(
      admission
        ? {
            admissionId: admission.id,
            key: subjectOf({ level: "key", id: admission.principal.id }),
            admittedAt: admission.admittedAt,
            shared: admission.shared,
            ...(admission.principal.budget ? { budgetPeriod: admission.principal.budget.period } : {}),
            reservedTokens: 0,
            reservedMicros: admission.reservedMicros,
            ...(admission.parents.length > 0 ? { parents: admission.parents.map((p) => ({ level: p.level, id: p.id, name: p.name, reservedTokens: 0 })) } : {}),
            record,
          }
        : { admissionId: record.id!, key: ANONYMOUS, admittedAt: record.at, shared: true, reservedTokens: 0, reservedMicros: 0, record },
    );
    return { record, result };
  })();
  deps.settled(work, record.requestId);
}
