/**
 * What routing knows about each target (by key, `provider/model`), across
 * aliases: streams in flight (least-busy) and an exponentially weighted
 * moving average of time to first delta (least-latency).
 */
export interface TargetStats {
  inFlight(key: string): number;
  /** Smoothed time to first delta in ms; undefined before the first sample. */
  ttftMs(key: string): number | undefined;
  begin(key: string): void;
  end(key: string): void;
  recordTtft(key: string, ms: number): void;
}

/** Weight of the newest sample: recent enough to notice a slowdown within a few requests. */
const ALPHA = 0.3;

export function createTargetStats(): TargetStats {
  const inFlight = new Map<string, number>();
  const ttft = new Map<string, number>();
  return {
    inFlight: (key) => inFlight.get(key) ?? 0,
    ttftMs: (key) => ttft.get(key),
    begin(key) {
      inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
    },
    end(key) {
      inFlight.set(key, Math.max(0, (inFlight.get(key) ?? 0) - 1));
    },
    recordTtft(key, ms) {
      const previous = ttft.get(key);
      ttft.set(key, previous === undefined ? ms : previous + ALPHA * (ms - previous));
    },
  };
}
