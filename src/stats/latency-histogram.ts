/**
 * Buckets per doubling: each bucket is 2^(1/4) ≈ 19% wide, so a
 * percentile read from it is within about 9% of the true value. Good
 * enough for a live chart; the exact histograms are Prometheus's.
 */
const PER_DOUBLING = 4;
/** 2^(80/4) ms ≈ 17 minutes: anything slower lands in the last bucket. */
export const LATENCY_BUCKETS = 80;

/** The bucket a latency in milliseconds falls in; below 1 ms is bucket 0. */
export function bucketOf(ms: number): number {
  if (!(ms > 1)) return 0;
  const index = Math.floor(Math.log2(ms) * PER_DOUBLING) + 1;
  return index >= LATENCY_BUCKETS ? LATENCY_BUCKETS - 1 : index;
}

/** A value representative of a bucket: its geometric middle (bucket 0: 0.5 ms). */
function bucketValue(bucket: number): number {
  if (bucket === 0) return 0.5;
  return 2 ** ((bucket - 0.5) / PER_DOUBLING);
}

/**
 * A fixed-size log-scale histogram of latencies: constant memory whatever
 * the traffic, merged by adding counts, so a window of seconds is the sum
 * of its seconds.
 */
export interface LatencyHistogram {
  readonly counts: Uint32Array;
  total: number;
}

export function createLatencyHistogram(): LatencyHistogram {
  return { counts: new Uint32Array(LATENCY_BUCKETS), total: 0 };
}

export function recordLatency(histogram: LatencyHistogram, ms: number): void {
  histogram.counts[bucketOf(ms)]!++;
  histogram.total++;
}

export function mergeLatency(into: LatencyHistogram, from: LatencyHistogram): void {
  for (let i = 0; i < LATENCY_BUCKETS; i++) into.counts[i]! += from.counts[i]!;
  into.total += from.total;
}

/** The `q` quantile (0 < q ≤ 1) in milliseconds, rounded to 0.1 ms; undefined for an empty histogram. */
export function latencyQuantile(histogram: LatencyHistogram, q: number): number | undefined {
  if (histogram.total === 0) return undefined;
  const rank = Math.max(1, Math.ceil(q * histogram.total));
  let seen = 0;
  for (let i = 0; i < LATENCY_BUCKETS; i++) {
    seen += histogram.counts[i]!;
    if (seen >= rank) return Math.round(bucketValue(i) * 10) / 10;
  }
  return Math.round(bucketValue(LATENCY_BUCKETS - 1) * 10) / 10;
}
