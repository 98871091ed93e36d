import type { FieldMask } from "@bufbuild/protobuf/wkt";
import { type Budget, Period, type KeyLimits as ProtoKeyLimits } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import type { BudgetPeriod, KeyBudget, KeyLimits } from "../../config/config.js";
import { GatewayError } from "../../core/errors.js";

/** The admin service's wire values and the tenancy's settings, both ways; bounds are checked by the admins, as for configured keys. */
export const PERIODS: Record<BudgetPeriod, Period> = { day: Period.DAY, week: Period.WEEK, month: Period.MONTH };

export function periodKind(period: Period): BudgetPeriod | undefined {
  switch (period) {
    case Period.DAY:
      return "day";
    case Period.WEEK:
      return "week";
    case Period.MONTH:
      return "month";
    default:
      return undefined;
  }
}

export function limitsOf(limits: ProtoKeyLimits | undefined): KeyLimits {
  return {
    ...(limits?.requestsPerMinute === undefined ? {} : { requestsPerMinute: limits.requestsPerMinute }),
    ...(limits?.tokensPerMinute === undefined ? {} : { tokensPerMinute: Number(limits.tokensPerMinute) }),
    ...(limits?.concurrentStreams === undefined ? {} : { concurrentStreams: limits.concurrentStreams }),
  };
}

export function budgetOf(budget: Budget | undefined): KeyBudget | undefined {
  return budget ? { usdMicros: Number(budget.usdMicros), period: periodKind(budget.period) ?? "month" } : undefined;
}

export function limitsToProto(limits: KeyLimits) {
  return {
    ...(limits.requestsPerMinute === undefined ? {} : { requestsPerMinute: limits.requestsPerMinute }),
    ...(limits.tokensPerMinute === undefined ? {} : { tokensPerMinute: BigInt(limits.tokensPerMinute) }),
    ...(limits.concurrentStreams === undefined ? {} : { concurrentStreams: limits.concurrentStreams }),
  };
}

export function budgetToProto(budget: KeyBudget | undefined) {
  return budget ? { budget: { usdMicros: BigInt(budget.usdMicros), period: PERIODS[budget.period] } } : {};
}

/**
 * Which fields an Update call changes (AIP-134): those its mask names, a
 * named field left empty clearing it; without a mask, those that are set.
 * An unknown path is INVALID_ARGUMENT rather than ignored, so a typo never
 * looks like a change that happened.
 */
export function maskedFields<F extends string>(mask: FieldMask | undefined, allowed: readonly F[], set: Readonly<Record<F, boolean>>): ReadonlySet<F> {
  if (!mask || mask.paths.length === 0) return new Set(allowed.filter((f) => set[f]));
  const fields = new Set<F>();
  for (const path of mask.paths) {
    if (!(allowed as readonly string[]).includes(path)) throw new GatewayError("invalid_request", `update_mask: unknown field ${JSON.stringify(path.slice(0, 64))} (one of ${allowed.join(", ")})`, { field: "update_mask" });
    fields.add(path as F);
  }
  return fields;
}
