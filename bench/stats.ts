/** Percentile by nearest rank; NaN for no samples. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

/** n, p50, p99 and max; sorts once. No spread into Math.max: a capacity run has hundreds of thousands of samples, past the call stack's argument limit. */
export function summary(values: readonly number[]): { n: number; p50: number; p99: number; max: number } {
  if (values.length === 0) return { n: 0, p50: Number.NaN, p99: Number.NaN, max: Number.NaN };
  const sorted = Float64Array.from(values).sort();
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
  return { n: values.length, p50: at(50), p99: at(99), max: sorted[sorted.length - 1]! };
}

/** Epoch milliseconds, sub-millisecond, comparable across processes on one machine. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

export const round = (n: number, digits = 2): number => (Number.isFinite(n) ? Math.round(n * 10 ** digits) / 10 ** digits : n);
