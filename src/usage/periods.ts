import type { BudgetPeriod } from "../config/settings.js";

/**
 * UTC calendar periods, the units of budgets and usage rollups: a day, an
 * ISO week (Monday 00:00 UTC), a month. The id names the period by its
 * first day (`d2026-05-14`, `w2026-05-11`, `m2026-05`); the Redis scripts
 * compute the same ids from Redis's clock (store/redis-scripts.ts), and a
 * test holds the two to agreement.
 */
export interface Period {
  readonly kind: BudgetPeriod;
  readonly id: string;
  /** Epoch milliseconds of its first instant, and of the first instant after it. */
  readonly startMs: number;
  readonly endMs: number;
}

const DAY_MS = 86_400_000;

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

function dateId(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
}

export function periodOf(kind: BudgetPeriod, epochMs: number): Period {
  const days = Math.floor(epochMs / DAY_MS);
  switch (kind) {
    case "day":
      return { kind, id: `d${dateId(days * DAY_MS)}`, startMs: days * DAY_MS, endMs: (days + 1) * DAY_MS };
    case "week": {
      // 1970-01-01 was a Thursday: (days + 3) % 7 is 0 on Mondays.
      const monday = days - ((((days + 3) % 7) + 7) % 7);
      return { kind, id: `w${dateId(monday * DAY_MS)}`, startMs: monday * DAY_MS, endMs: (monday + 7) * DAY_MS };
    }
    case "month": {
      const d = new Date(epochMs);
      const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
      const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
      return { kind, id: `m${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}`, startMs: start, endMs: end };
    }
  }
}

export const PERIOD_KINDS: readonly BudgetPeriod[] = ["day", "week", "month"];

/**
 * How long a period's rollup lives after its last write: at least 35 days,
 * 15 weeks and 13 months after the period ended (GetUsage answers zeros
 * past it).
 */
export const ROLLUP_TTL_MS: Readonly<Record<BudgetPeriod, number>> = {
  day: 36 * DAY_MS,
  week: 16 * 7 * DAY_MS,
  month: 431 * DAY_MS,
};

/** The period an id names (`d2026-05-14`, `w2026-05-11`, `m2026-05`); undefined for anything else. */
export function periodFromId(kind: BudgetPeriod, id: string): Period | undefined {
  const match = /^[dwm](\d{4})-(\d{2})(?:-(\d{2}))?$/.exec(id);
  if (!match) return undefined;
  return periodOf(kind, Date.UTC(Number(match[1]), Number(match[2]) - 1, match[3] === undefined ? 1 : Number(match[3])));
}
