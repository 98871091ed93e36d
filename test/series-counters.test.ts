import { DataPointType, MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { describe, expect, it } from "vitest";
import { createSeriesCounters } from "../src/telemetry/series-counters.js";

class TestReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

/** A counter whose adds go through summed series, drained the way metrics.ts drains them: from an observable callback. */
function setUp() {
  const reader = new TestReader();
  const meter = new MeterProvider({ readers: [reader] }).getMeter("test");
  const counter = meter.createCounter("c");
  const series = createSeriesCounters();
  const gauge = meter.createObservableGauge("g");
  meter.addBatchObservableCallback(() => series.drain(), [gauge]);
  const read = async (): Promise<Record<string, number>> => {
    const { resourceMetrics } = await reader.collect();
    const out: Record<string, number> = {};
    for (const metric of resourceMetrics.scopeMetrics.flatMap((s) => s.metrics)) {
      if (metric.descriptor.name !== "c" || metric.dataPointType !== DataPointType.SUM) continue;
      for (const point of metric.dataPoints) out[String(point.attributes.k)] = point.value as number;
    }
    return out;
  };
  return { counter, series, read };
}

describe("summed counter series", () => {
  it("a collection sees every add since the last one, per series, and cumulative sums stay right", async () => {
    const { counter, series, read } = setUp();
    series.add(counter, "a", 1, () => ({ k: "a" }));
    series.add(counter, "a", 2, () => ({ k: "a" }));
    series.add(counter, "b", 5, () => ({ k: "b" }));
    expect(await read()).toEqual({ a: 3, b: 5 });
    expect(await read()).toEqual({ a: 3, b: 5 });
    series.add(counter, "a", 4, () => ({ k: "a" }));
    expect(await read()).toEqual({ a: 7, b: 5 });
  });

  it("a series first added at 0 is exported at 0, as a direct add would be", async () => {
    const { counter, series, read } = setUp();
    series.add(counter, "z", 0, () => ({ k: "z" }));
    expect(await read()).toEqual({ z: 0 });
  });

  it("builds a series' attributes once, the first time its key is seen", async () => {
    const { counter, series, read } = setUp();
    let built = 0;
    const attributes = () => {
      built++;
      return { k: "a" };
    };
    for (let i = 0; i < 10; i++) series.add(counter, "a", 1, attributes);
    expect(built).toBe(1);
    expect(await read()).toEqual({ a: 10 });
  });
});
