import { Period } from "../../../gen/sluice/admin/v1/admin_service_pb.js";

/** The UTC calendar period containing `ms`, as budgets count it: a day, an ISO week from Monday, a month. */
export function periodStart(period: Period, ms: number): number {
  const d = new Date(ms);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (period === Period.DAY) return day;
  if (period === Period.WEEK) return day - ((d.getUTCDay() + 6) % 7) * 86_400_000;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

export const PERIOD_WORDS: Record<Period, string> = {
  [Period.UNSPECIFIED]: "month",
  [Period.DAY]: "day",
  [Period.WEEK]: "week",
  [Period.MONTH]: "month",
};

/** A budget's period: month when unset, as the gateway reads it. */
export function budgetPeriod(period: Period): Period {
  return period === Period.UNSPECIFIED ? Period.MONTH : period;
}
