import { KiB, load, log, runtime, type Services, simIdle, simRecords, simReset, targetSpec } from "../services.js";
import { round } from "../stats.js";

// 5. Slow consumer ------------------------------------------------------------
export async function slowScenario(s: Services) {
  const { streams, durationMs } = s.size.slow;
  const tokenChars = 4000;
  const tokens = 2000;
  const out: Record<
    string,
    {
      rssGrowthKiBPerStream?: number;
      liveHeapKiBPerStream?: number;
      lateLiveHeapKiBPerStream?: number;
      upstreamWrittenKiBPerStream: number;
      aheadOfClientKiBPerStream: number;
      potentialKiBPerStream: number;
    }
  > = {};
  for (const kind of ["direct", "sluice-grpc", "sluice-sse"] as const) {
    await simIdle(s);
    await simReset(s);
    const before = s.gateway.rssBytes();
    const idleHeap = (await runtime(s, { gc: true })).heapUsedBytes;
    const samples: number[] = [];
    const live: number[] = [];
    const liveAt = [durationMs / 2, durationMs - 500];
    const t0 = performance.now();
    const run = load<{ delivered: Record<string, number> }>({
      scenario: "slow",
      target: targetSpec(s, kind),
      streams,
      readIntervalMs: 50,
      durationMs,
      prompt: `#sim tokens=${tokens} token_chars=${tokenChars}`,
    });
    let done = false;
    void run.finally(() => (done = true));
    while (!done) {
      await new Promise((r) => setTimeout(r, 200)); // monitor sampling
      samples.push(s.gateway.rssBytes());
      if (kind !== "direct" && live.length < liveAt.length && performance.now() - t0 >= liveAt[live.length]!) {
        live.push((await runtime(s, { gc: true })).heapUsedBytes - idleHeap);
      }
    }
    const r = await run;
    const records = (await simRecords(s)).filter((x) => x.tag?.startsWith("slow-"));
    const written = records.reduce((a, x) => a + x.bytesWritten, 0) / records.length;
    const delivered = Object.values(r.delivered).reduce((a, b) => a + b, 0) / streams;
    out[kind] = {
      ...(kind === "direct"
        ? {}
        : {
            rssGrowthKiBPerStream: (Math.max(...samples) - before) / KiB / streams,
            liveHeapKiBPerStream: (live.at(-1) ?? Number.NaN) / KiB / streams,
            lateLiveHeapKiBPerStream: ((live[1] ?? Number.NaN) - (live[0] ?? Number.NaN)) / KiB / streams,
          }),
      upstreamWrittenKiBPerStream: written / KiB,
      aheadOfClientKiBPerStream: (written - delivered) / KiB,
      potentialKiBPerStream: (tokens * tokenChars) / KiB,
    };
    log(`slow ${kind}: upstream wrote ${round(written / KiB)} KiB/stream of ${(tokens * tokenChars) / KiB}`);
  }
  return { streams, durationMs, results: out };
}
