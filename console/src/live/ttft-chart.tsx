import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import type { SeriesPoint } from "../../../gen/sluice/admin/v1/stats_pb.js";

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

/** TTFT p50/p99 (left axis) and deltas per second (right axis) over the series WatchStats sends: the last five minutes. */
export function TtftChart(props: { readonly series: readonly SeriesPoint[] }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);

  useEffect(() => {
    const element = box.current!;
    const chart = new uPlot(
      {
        width: Math.max(320, element.clientWidth),
        height: HEIGHT,
        legend: { live: false },
        cursor: { drag: { x: false, y: false } },
        scales: { ms: { auto: true }, rate: { auto: true } },
        axes: [
          {},
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
    const onResize = () => chart.setSize({ width: Math.max(320, element.clientWidth), height: HEIGHT });
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
