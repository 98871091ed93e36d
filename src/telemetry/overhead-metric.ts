import type { Attributes, Histogram } from "@opentelemetry/api";

/**
 * Records a call's `sluice-overhead-ms` (milliseconds) into the
 * `sluice.overhead` histogram (seconds, as every duration here), labelled
 * by `sluice.edge`: a closed list set by the edges, so one attribute
 * object per edge is kept rather than one made per call.
 */
export function overheadHistogram(histogram: Histogram): (edge: string, ms: number) => void {
  const byEdge = new Map<string, Attributes>();
  return (edge, ms) => {
    let attributes = byEdge.get(edge);
    if (!attributes) {
      attributes = { "sluice.edge": edge };
      byEdge.set(edge, attributes);
    }
    histogram.record(ms / 1000, attributes);
  };
}
