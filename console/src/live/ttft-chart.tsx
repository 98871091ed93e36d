import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import type { SeriesPoint } from "../../../gen/sluice/admin/v1/stats_pb.js";
import { chartWidth } from "../chart-width.js";
import { clockLabel, placeLabels } from "./time-labels.js";

/** uPlot's columns: seconds since the epoch, TTFT p50 and p99 (ms, gaps as null), deltas per second. */
type Columns = [number[], (number | null)[], (number | null)[], number[]];

function columns(series: readonly SeriesPoint[]): Columns {
  const data: Columns = [[], [], [], []];
  for (const p of series) {
    data[0].push(Number(p.timeMs) / 1000);
    data[1].push(p.ttftP50Ms ?? null);
    data[2].push(p.ttftP99Ms ?? null);
    data[3].push(p.deltas);
  }
  return data;
}

const HEIGHT = 220;

/** The time axis's font: labels are measured in it. */
const TIME_FONT = "12px system-ui, sans-serif";

/** Least distance between time ticks, CSS px: room for an HH:MM:SS label and a gap. */
const TIME_TICK_SPACE = 70;

const measure = document.createElement("canvas").getContext("2d");

function textWidth(text: string): number {
  if (!measure) return text.length * 8;
  measure.font = TIME_FONT;
  return measure.measureText(text).width;
}

/** Clock times at the ticks uPlot chose, those that would touch a label before them left out. */
function timeLabels(u: uPlot, splits: number[], _axis: number, _space: number, incr: number): (string | null)[] {
  return placeLabels(
    splits.map((s) => ({ pos: u.valToPos(s, "x"), text: clockLabel(s, incr) })),
    textWidth,
  );
}

/** TTFT p50/p99 (left axis) and deltas per second (right axis) over the series WatchStats sends: the last five minutes. */
export function TtftChart(props: { readonly series: readonly SeriesPoint[] }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);

  useEffect(() => {
    const element = box.current!;
    const chart = new uPlot(
      {
        width: chartWidth(element),
        height: HEIGHT,
        legend: { live: false },
        cursor: { drag: { x: false, y: false } },
        scales: { ms: { auto: true }, rate: { auto: true } },
        axes: [
          { font: TIME_FONT, space: TIME_TICK_SPACE, values: timeLabels },
          { scale: "ms", label: "TTFT (ms)", size: 60 },
          { scale: "rate", label: "deltas/s", side: 1, grid: { show: false }, size: 60 },
        ],
        series: [
          {},
          // Points as well as lines: a second with streams between idle ones is a lone point, which a line alone would not draw.
          { label: "TTFT p50", scale: "ms", stroke: "#2563eb", width: 2, spanGaps: false, points: { show: true, size: 5 } },
          { label: "TTFT p99", scale: "ms", stroke: "#dc2626", width: 2, spanGaps: false, points: { show: true, size: 5 } },
          { label: "deltas/s", scale: "rate", stroke: "#9ca3af", fill: "rgba(156,163,175,0.15)", width: 1 },
        ],
      },
      columns(props.series),
      element,
    );
    plot.current = chart;
    const onResize = () => chart.setSize({ width: chartWidth(element), height: HEIGHT });
    window.addEventListener("resize", onResize);
    return () => {
      window.removeEventListener("resize", onResize);
      chart.destroy();
      plot.current = null;
    };
  }, []);

  useEffect(() => {
    plot.current?.setData(columns(props.series));
  }, [props.series]);

  return <div class="chart" ref={box} data-testid="ttft-chart" />;
}
