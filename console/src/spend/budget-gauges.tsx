import { usd } from "../format.js";

/** One budget and what its period has spent so far. */
export interface Gauge {
  readonly level: "key" | "team" | "business_line";
  readonly name: string;
  readonly period: string;
  readonly budgetMicros: number;
  readonly spentMicros: number;
}

const LEVEL_WORDS = { key: "key", team: "team", business_line: "business line" } as const;

/** Budgets as bars: spent of the period's budget, with the alert thresholds marked. */
export function BudgetGauges({ gauges, thresholds }: { readonly gauges: readonly Gauge[]; readonly thresholds: readonly number[] }) {
  return (
    <div class="gauges" data-testid="budget-gauges">
      {gauges.map((g) => {
        const share = g.budgetMicros > 0 ? g.spentMicros / g.budgetMicros : 0;
        const crossed = thresholds.filter((t) => share >= t).length;
        return (
          <div class="gauge" key={`${g.level}:${g.name}`} data-testid={`gauge-${g.level}-${g.name}`}>
            <div class="gauge-label">
              <span>
                {LEVEL_WORDS[g.level]} <b>{g.name}</b>
              </span>
              <span data-testid={`gauge-${g.level}-${g.name}-figures`}>
                {usd(g.spentMicros)} of {usd(g.budgetMicros)} this {g.period} ({Math.round(share * 100)} %)
              </span>
            </div>
            <div class={`gauge-bar ${crossed === 0 ? "" : crossed === thresholds.length ? "bad" : "warn"}`}>
              <div class="gauge-fill" style={{ width: `${Math.min(100, share * 100)}%` }} />
              {thresholds.map((t) => (
                <div class="gauge-mark" key={t} style={{ left: `${t * 100}%` }} title={`alert at ${Math.round(t * 100)} %`} />
              ))}
            </div>
          </div>
        );
      })}
    </div>
  );
}
