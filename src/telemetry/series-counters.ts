import type { Attributes, Counter } from "@opentelemetry/api";

/**
 * Counter adds summed here, one running sum per series, and handed to the
 * SDK when a reader collects. The SDK hashes a record's attributes on every
 * add (it sorts their keys and writes them out as JSON), and a stream ends
 * with five adds of eight or nine attributes each: with the histograms, most
 * of what metrics cost a stream. Here an add is a lookup by a key the caller
 * already has, and the SDK sees one add per series per collection. The
 * exposition is the same; the sums reach it at the collection, which is
 * when a reader could first see them anyway.
 */
export interface SeriesCounters {
  /**
   * Adds `value` to the series `key` of `counter`. One key must always stand
   * for the same attributes; `attributes` is called the first time a key is seen.
   */
  add(counter: Counter, key: string, value: number, attributes: () => Attributes): void;
  /** Hands every pending sum to its counter: called at the start of each collection. */
  drain(): void;
}

interface Series {
  readonly attributes: Attributes;
  pending: number;
  /** Handed to the SDK at least once: a series first added at 0 still appears, as it did. */
  reported: boolean;
}

export function createSeriesCounters(): SeriesCounters {
  const counters = new Map<Counter, Map<string, Series>>();
  return {
    add(counter, key, value, attributes) {
      let series = counters.get(counter);
      if (!series) counters.set(counter, (series = new Map()));
      const one = series.get(key);
      if (one) one.pending += value;
      else series.set(key, { attributes: attributes(), pending: value, reported: false });
    },
    drain() {
      for (const [counter, series] of counters) {
        for (const one of series.values()) {
          if (one.pending === 0 && one.reported) continue;
          counter.add(one.pending, one.attributes);
          one.pending = 0;
          one.reported = true;
        }
      }
    },
  };
}
