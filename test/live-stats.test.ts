import { describe, expect, it } from "vitest";
import { sha256Hex } from "../src/config/key-hash.js";
import { createTenantKeyStats, MAX_KEYS_SHOWN } from "../src/stats/key-stats.js";
import { bucketOf, createLatencyHistogram, latencyQuantile, recordLatency } from "../src/stats/latency-histogram.js";
import { createLiveStats, type LiveSources, SERIES_SECONDS, WINDOW_SECONDS } from "../src/stats/live-stats.js";
import { createMemoryTenantStore } from "../src/store/memory-tenant-store.js";
import { subjectOf } from "../src/store/tenant-store.js";
import { keyId } from "../src/tenancy/principal.js";

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

function statsAt(sources: Partial<LiveSources> = {}) {
  let now = T0;
  const live = createLiveStats({
    timers: { now: () => now },
    sources: { activeStreams: () => 0, queues: () => [], breakers: () => [], ...sources },
  });
  return { live, at: (ms: number) => (now = T0 + ms) };
}

describe("latency histogram", () => {
  it("reads quantiles within a bucket's width (about 19%) of the true value", () => {
    const h = createLatencyHistogram();
    for (let ms = 1; ms <= 1000; ms++) recordLatency(h, ms);
    const p50 = latencyQuantile(h, 0.5)!;
    const p99 = latencyQuantile(h, 0.99)!;
    expect(Math.abs(p50 - 500) / 500).toBeLessThan(0.1);
    expect(Math.abs(p99 - 990) / 990).toBeLessThan(0.1);
  });

  it("is empty-safe, and clamps sub-millisecond and enormous values into its end buckets", () => {
    const h = createLatencyHistogram();
    expect(latencyQuantile(h, 0.5)).toBeUndefined();
    expect(bucketOf(0)).toBe(0);
    expect(bucketOf(Number.NaN)).toBe(0);
    expect(bucketOf(1e12)).toBe(bucketOf(1e15));
  });
});

describe("live statistics (injected clock)", () => {
  it("counts deltas per second and reports the last whole second, not the one still filling", () => {
    const { live, at } = statsAt();
    at(0);
    for (let i = 0; i < 7; i++) live.delta();
    at(1_200);
    for (let i = 0; i < 3; i++) live.delta();
    // 1.5 s: second 0 is whole (7 deltas), second 1 is still filling.
    at(1_500);
    const s = live.snapshot();
    expect(s.deltasPerSecond).toBe(7);
    expect(s.series).toHaveLength(SERIES_SECONDS);
    expect(s.series.at(-1)).toMatchObject({ timeMs: T0, deltas: 7 });
    at(2_000);
    expect(live.snapshot().deltasPerSecond).toBe(3);
    // A second with nothing in it reads zero.
    at(5_000);
    expect(live.snapshot().deltasPerSecond).toBe(0);
  });

  it("places TTFT samples in the second their first delta came, per point and over the last minute", () => {
    const { live, at } = statsAt();
    at(0);
    live.firstDelta(100);
    live.firstDelta(100);
    at(10_000);
    live.firstDelta(800);
    at(11_000);
    const s = live.snapshot();
    const points = s.series.filter((p) => p.ttftP50Ms !== undefined);
    expect(points.map((p) => p.timeMs)).toEqual([T0, T0 + 10_000]);
    expect(Math.abs(points[0]!.ttftP50Ms! - 100) / 100).toBeLessThan(0.1);
    expect(s.ttft.samples).toBe(3);
    expect(s.ttft.windowSeconds).toBe(WINDOW_SECONDS);
    expect(Math.abs(s.ttft.p99Ms! - 800) / 800).toBeLessThan(0.1);
    // A minute later the samples have left the window; the series still shows them.
    at(69_500);
    const later = live.snapshot();
    expect(later.ttft.samples).toBe(1);
    at(80_000);
    expect(live.snapshot().ttft).toEqual({ samples: 0, windowSeconds: WINDOW_SECONDS });
  });

  it("keeps outcomes since start and in the last minute, ok first, and counts client aborts", () => {
    const { live, at } = statsAt();
    at(0);
    live.ended("ok", false);
    live.ended("canceled", true);
    at(30_000);
    live.ended("ok", false);
    live.ended("upstream_unavailable", false);
    at(65_000);
    const s = live.snapshot();
    expect(s.outcomes).toEqual([
      { outcome: "ok", total: 2, lastMinute: 1 },
      { outcome: "canceled", total: 1, lastMinute: 0 },
      { outcome: "upstream_unavailable", total: 1, lastMinute: 1 },
    ]);
    expect(s.clientAborts).toBe(1);
    expect(s.series.find((p) => p.timeMs === T0 + 30_000)?.streamsEnded).toBe(2);
  });

  it("reuses its ring: after five idle minutes old seconds read empty, and memory does not grow", () => {
    const { live, at } = statsAt();
    at(0);
    for (let i = 0; i < 5; i++) live.delta();
    live.firstDelta(50);
    // The same slot (second 301 ≡ second 0 in a 301-slot ring) is claimed by a later second.
    at((SERIES_SECONDS + 1) * 1000);
    live.delta();
    at((SERIES_SECONDS + 2) * 1000);
    const s = live.snapshot();
    expect(s.series.reduce((sum, p) => sum + p.deltas, 0)).toBe(1);
    expect(s.series.every((p) => p.ttftP50Ms === undefined)).toBe(true);
    expect(s.series[0]!.timeMs).toBe(T0 + 2_000);
  });

  it("counts retries, failovers, hedges started and won", () => {
    const { live } = statsAt();
    live.attempt("retry");
    live.attempt("failover");
    live.attempt("failover");
    live.attempt("hedge");
    live.hedgeWon();
    expect(live.snapshot().attempts).toEqual({ retries: 1, failovers: 2, hedgesStarted: 1, hedgesWon: 1 });
  });

  it("reads gauges from their owners when the snapshot is taken, sorted by name", () => {
    let active = 2;
    const { live } = statsAt({
      activeStreams: () => active,
      queues: () => [
        { provider: "b", waiting: 1, inFlight: 4 },
        { provider: "a", waiting: 0, inFlight: 1 },
      ],
      breakers: () => [
        { target: "b/m", state: "open", aliases: ["beta"] },
        { target: "a/m", state: "closed", aliases: ["alpha", "also-alpha"] },
      ],
    });
    expect(live.snapshot()).toMatchObject({
      activeStreams: 2,
      queues: [
        { provider: "a", waiting: 0, inFlight: 1 },
        { provider: "b", waiting: 1, inFlight: 4 },
      ],
      breakers: [
        { target: "a/m", state: "closed", aliases: ["alpha", "also-alpha"] },
        { target: "b/m", state: "open", aliases: ["beta"] },
      ],
    });
    active = 0;
    expect(live.snapshot().activeStreams).toBe(0);
  });
});

describe("per-key figures from the tenant store", () => {
  // Keys by name as a test writes them; their figures are kept under their ids.
  const hashOf = (name: string) => sha256Hex(`sk-${name}`);
  const subject = (name: string) => subjectOf({ level: "key", id: keyId(hashOf(name)) });
  const settle = async (store: ReturnType<typeof createMemoryTenantStore>, name: string, id: string, outputTokens: number, costMicros: number) => {
    const key = subject(name);
    const admitted = await store.admit({ key, admissionId: id, limits: {}, reserveTokens: 0, reserveMicros: 0 });
    if (!admitted.ok) throw new Error("not admitted");
    await store.settle({
      admissionId: id,
      key,
      admittedAt: admitted.admittedAt,
      shared: true,
      reservedTokens: 0,
      reservedMicros: 0,
      record: { requestId: id, key, alias: "demo", target: "sim/m", inputTokens: 3, outputTokens, cachedInputTokens: 0, reasoningTokens: 0, costMicros, estimated: false, durationMs: 1, outcome: "completed", at: T0 },
    });
  };

  it("reports requests, tokens, spend and budget left per key, busiest first, read at most once a second", async () => {
    let now = T0;
    const store = createMemoryTenantStore({ now: () => now });
    let reads = 0;
    let headroomReads = 0;
    const counting = {
      ...store,
      usage: (...args: Parameters<typeof store.usage>) => (reads++, store.usage(...args)),
      headroom: (...args: Parameters<typeof store.headroom>) => (headroomReads++, store.headroom(...args)),
    };
    const stats = createTenantKeyStats({
      store: counting,
      timers: { now: () => now },
      configured: () => [
        { name: "quiet", sha256: hashOf("quiet"), limits: { requestsPerMinute: 60 } },
        { name: "busy", sha256: hashOf("busy"), limits: { tokensPerMinute: 1000, concurrentStreams: 2 }, budget: { usdMicros: 5_000_000, period: "day" } },
      ],
    });
    await settle(store, "busy", "a1", 10, 1_000);
    await settle(store, "busy", "a2", 20, 2_000);
    const first = await stats();
    expect(first).toEqual([
      { name: "busy", requests: 2, inputTokens: 6, outputTokens: 30, spendMicros: 3_000, budgetMicros: 5_000_000, budgetRemainingMicros: 4_997_000, tokensPerMinute: 1000, concurrentStreams: 2, tokensRemaining: 1000, streamsActive: 0 },
      { name: "quiet", requests: 0, inputTokens: 0, outputTokens: 0, spendMicros: 0, requestsPerMinute: 60, requestsRemaining: 60, streamsActive: 0 },
    ]);
    expect([reads, headroomReads]).toEqual([2, 2]);
    // Many watchers in the same second share one read.
    await Promise.all([stats(), stats(), stats()]);
    expect([reads, headroomReads]).toEqual([2, 2]);
    now += 1_000;
    // A stream admitted and still running shows in the next second's figures.
    await store.admit({ key: subject("quiet"), admissionId: "q1", limits: { requestsPerMinute: 60 }, reserveTokens: 0, reserveMicros: 0 });
    expect((await stats()).find((k) => k.name === "quiet")).toMatchObject({ requestsRemaining: 59, streamsActive: 1 });
    expect([reads, headroomReads]).toEqual([4, 4]);
    expect(MAX_KEYS_SHOWN).toBeGreaterThan(0);
  });

  it("reads headroom only for the keys a snapshot shows", async () => {
    const store = createMemoryTenantStore({ now: () => T0 });
    const asked: string[] = [];
    const stats = createTenantKeyStats({
      store: { ...store, headroom: (key, limits) => (asked.push(key), store.headroom(key, limits)) },
      timers: { now: () => T0 },
      configured: () => Array.from({ length: MAX_KEYS_SHOWN + 5 }, (_, i) => ({ name: `k${String(i).padStart(3, "0")}`, sha256: hashOf(`k${String(i).padStart(3, "0")}`), limits: { requestsPerMinute: 5 } })),
    });
    await settle(store, "k104", "b1", 1, 1);
    const shown = await stats();
    expect(shown).toHaveLength(MAX_KEYS_SHOWN);
    expect(shown[0]).toMatchObject({ name: "k104", requests: 1, requestsRemaining: 5, streamsActive: 0 });
    expect(asked.sort()).toEqual(shown.map((k) => subject(k.name)).sort());
  });
});
