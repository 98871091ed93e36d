import type { BudgetPeriod, KeyBudget } from "../config/config.js";
import { type LevelSpend, type Settlement, subjectOf, type TenantLevel } from "../store/tenant-store.js";
import { periodOf } from "../usage/periods.js";
import type { LevelIdentity } from "./tenant-charge.js";

/** A budget threshold crossed: what the log line, the metric and the webhook say. */
export interface BudgetAlert {
  /** Unique per level, period and threshold: the webhook's event id, the same on every retry. */
  readonly id: string;
  readonly level: TenantLevel;
  readonly name: string;
  /** The level's id (a key's Principal.id): a key or team of the same name created later is another. */
  readonly levelId: string;
  /** The fraction of the budget crossed (0.8). */
  readonly threshold: number;
  readonly period: BudgetPeriod;
  /** The period's id (`m2026-12`, usage/periods.ts). */
  readonly periodId: string;
  readonly periodStart: number;
  readonly periodEnd: number;
  readonly budgetMicros: number;
  /** Spent in the period once the call that crossed the threshold was counted; absent for a budget found full at admission (spend and reservations together). */
  readonly spentMicros?: number;
  /** Epoch ms. */
  readonly at: number;
}

export interface BudgetAlertOptions {
  /** Ascending fractions of a budget. */
  readonly thresholds: () => readonly number[];
  /** A level's budget now (absent: it has none, or the level is gone, and nothing is announced). */
  readonly budgetOf: (level: TenantLevel, ref: LevelIdentity) => KeyBudget | undefined;
  /**
   * Takes the right to announce `id` once: true for the first replica that
   * asks in the period (Redis SET NX), false for every other. Until `ttlMs`.
   */
  readonly claim: (id: string, ttlMs: number) => Promise<boolean>;
  readonly announce: (alert: BudgetAlert) => void;
  readonly now?: () => number;
}

/** The thresholds a call crossed: those its cost moved the spend from under to at or over. */
export function crossed(thresholds: readonly number[], budgetMicros: number, before: number, after: number): number[] {
  return thresholds.filter((t) => before < t * budgetMicros && after >= t * budgetMicros);
}

/**
 * Budget alerts (docs/tenancy.md, "Budget alerts"): after each settle, every
 * level of the call with a budget (key, team, business line) is checked for
 * thresholds its cost crossed, from the spend the settle itself counted (no
 * extra read). Each crossing is announced once per period across replicas:
 * the first to claim it in the shared store announces it. Runs after the
 * stream's last delta went out, never on a request's path.
 */
export interface BudgetAlerts {
  /** After a settle: the thresholds its cost crossed, at every level. */
  readonly onSpend: (settlement: Settlement, spent: readonly LevelSpend[]) => void;
  /**
   * A request refused because a level's budget is full (spent, or held by
   * streams still running): the 100 % threshold, when configured. Spend
   * alone rarely reaches a budget exactly, since admission refuses what
   * could pass it; a refusal is what "the budget is used up" means to
   * the people paying.
   */
  readonly refused: (level: TenantLevel, ref: LevelIdentity, atMs: number) => void;
}

export function createBudgetAlerts(options: BudgetAlertOptions): BudgetAlerts {
  const now = options.now ?? Date.now;
  const announceOnce = (level: TenantLevel, ref: LevelIdentity, budget: KeyBudget, threshold: number, atMs: number, spentMicros?: number) => {
    const period = periodOf(budget.period, atMs);
    const { name } = ref;
    const id = `${subjectOf({ level, id: ref.id })}:${period.id}:${Math.round(threshold * 1000)}`;
    const at = now();
    void options.claim(id, Math.max(60_000, period.endMs - at + 86_400_000)).then(
      (first) => {
        if (!first) return;
        options.announce({
          id,
          level,
          name,
          levelId: ref.id,
          threshold,
          period: budget.period,
          periodId: period.id,
          periodStart: period.startMs,
          periodEnd: period.endMs,
          budgetMicros: budget.usdMicros,
          ...(spentMicros === undefined ? {} : { spentMicros }),
          at,
        });
      },
      () => undefined, // the store reports its own trouble; an alert it could not claim is not announced twice
    );
  };
  const refused: BudgetAlerts["refused"] = (level, ref, atMs) => {
    const budget = options.budgetOf(level, ref);
    if (budget && options.thresholds().includes(1)) announceOnce(level, ref, budget, 1, atMs);
  };
  const onSpend: BudgetAlerts["onSpend"] = (settlement, spent) => {
    const cost = settlement.record.costMicros;
    if (cost <= 0) return;
    const { record } = settlement;
    const levels: Array<LevelIdentity & { readonly level: TenantLevel }> = [{ level: "key", id: record.keyId ?? "", name: record.key }, ...(settlement.parents ?? [])];
    levels.forEach((ref, i) => {
      const { level } = ref;
      const budget = options.budgetOf(level, ref);
      const figures = spent[i];
      if (!budget || !figures) return;
      const after = figures[budget.period];
      if (after < 0) return;
      for (const threshold of crossed(options.thresholds(), budget.usdMicros, after - cost, after)) announceOnce(level, ref, budget, threshold, settlement.admittedAt, after);
    });
  };
  return { onSpend, refused };
}
