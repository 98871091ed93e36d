import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import { chartWidth } from "../chart-width.js";
import { placeLabels } from "../live/time-labels.js";
import { bucketLabel } from "../time-format.js";

/** Spend per bucket and group, stacked: x in seconds, one row of micro-dollars per group. */
export interface StackedSeries {
  readonly x: readonly number[];
  readonly groups: ReadonlyArray<{ readonly name: string; readonly micros: readonly number[] }>;
}

const COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"];
const HEIGHT = 240;

/**
 * Stacked areas: each group's line is the running sum of the groups
 * before it, drawn from the top of the stack down so that each area shows
 * between its line and the one below (uPlot draws no stacks of its own).
 */
export function stack(series: StackedSeries): number[][] {
  const sums: number[][] = [];
  series.groups.forEach((g, i) => sums.push(g.micros.map((m, j) => m / 1e6 + (i > 0 ? sums[i - 1]![j]! : 0))));
  return [[...series.x], ...sums.reverse()];
}

/** The time axis's font: labels are measured in it. */
const TIME_FONT = "12px system-ui, sans-serif";
const measure = document.createElement("canvas").getContext("2d");

function textWidth(text: string): number {
  if (!measure) return text.length * 8;
  measure.font = TIME_FONT;
  return measure.measureText(text).width;
}

/** Whether the buckets are days (else hours). */
const daily = (series: StackedSeries) => series.x.length > 1 && series.x[1]! - series.x[0]! >= 86_400;

export function SpendChart({ series }: { readonly series: StackedSeries }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current!;
    const names = series.groups.map((g) => g.name).reverse();
    const days = daily(series);
    const chart = new uPlot(
      {
        width: chartWidth(element),
        height: HEIGHT,
        cursor: { drag: { x: false, y: false } },
        axes: [
          {
            font: TIME_FONT,
            space: days ? 90 : 50,
            values: (u: uPlot, splits: number[]) =>
              placeLabels(
                splits.map((s) => ({ pos: u.valToPos(s, "x"), text: bucketLabel(s, days, "axis") })),
                textWidth,
              ),
          },
          { label: "USD", size: 70 },
        ],
        series: [
          { label: "UTC", value: (_u: uPlot, v: number | null) => (v === null ? "–" : bucketLabel(v, days, "legend")) },
          ...names.map((name, i) => {
            const color = COLORS[(names.length - 1 - i) % COLORS.length]!;
            return { label: name === "" ? "(none)" : name, stroke: color, fill: `${color}cc`, width: 1, value: (_u: uPlot, v: number | null) => (v === null ? "–" : `$${v.toFixed(4)}`) };
          }),
        ],
      },
      stack(series) as uPlot.AlignedData,
      element,
    );
    return () => chart.destroy();
  }, [series]);
  return <div ref={box} class="chart" data-testid="spend-chart" />;
}
