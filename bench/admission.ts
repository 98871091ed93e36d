// Admission latency: the store's admit script round trip against a real Redis, without a gateway around it.
// Usage: node dist/bench/admission.js [redis-url] [n]
// It measures whichever Redis client createStoreClient builds, so running the build of two commits side by side is the A/B (issue 45 §5).
import { randomUUID } from "node:crypto";
import { createRedisTenantStore, createStoreClient } from "../src/store/redis-tenant-store.js";
import { type AdmitRequest, type ParentLevel, subjectOf } from "../src/store/tenant-store.js";

const url = process.argv[2] ?? "redis://127.0.0.1:6379";
const n = Number(process.argv[3] ?? 5_000);
const CONCURRENCY = 64;
const LIMITS = { requestsPerMinute: 10_000_000, tokensPerMinute: 1_000_000_000, concurrentStreams: 1_000_000 };
const BUDGET = { usdMicros: 1_000_000_000_000, period: "month" as const };

/** The two clients differ in how they connect and close; the bench only needs these. */
interface AnyClient {
  on(event: "error", listener: (error: unknown) => void): unknown;
  connect(): Promise<unknown>;
  destroy?(): void;
  disconnect?(): void;
}

const made = createStoreClient({ url, timeoutMs: 5_000 });
const client = made as unknown as AnyClient;
client.on("error", () => undefined);
await client.connect(); // neither client connects before it is asked to

/** A fresh prefix per scenario: windows and leases left by the one before would slow the script down. Keys are under sluice-bench:admission: (delete them with redis-cli --scan). */
const freshStore = () => createRedisTenantStore({ client: made, prefix: `sluice-bench:admission:${randomUUID().slice(0, 8)}:`, streamLeaseMs: 60_000, usageStreamMaxLen: 1_000 });

const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

function request(levels: number): AdmitRequest {
  const parents: ParentLevel[] = [
    { level: "team", id: "bench-team", name: "bench-team", limits: LIMITS, budget: BUDGET },
    { level: "businessLine", id: "bench-line", name: "bench-line", limits: LIMITS, budget: BUDGET },
  ].slice(0, levels - 1) as ParentLevel[];
  return { key: subjectOf({ level: "key", id: "bench-key" }), admissionId: randomUUID(), limits: LIMITS, budget: BUDGET, reserveTokens: 1_000, reserveMicros: 100, parents };
}

async function run(levels: number, concurrency: number): Promise<{ p50: number; p99: number; perSecond: number }> {
  const store = freshStore();
  const times: number[] = [];
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < n) {
      next++;
      const req = request(levels);
      const t0 = performance.now();
      const result = await store.admit(req);
      times.push(performance.now() - t0);
      if (!result.ok) throw new Error(`refused: ${result.reason}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = performance.now() - started;
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99), perSecond: (n / elapsed) * 1_000 };
}

try {
  await run(1, 1); // warm-up: script load, JIT
  for (const levels of [1, 3]) {
    for (const concurrency of [1, CONCURRENCY]) {
      const r = await run(levels, concurrency);
      console.log(JSON.stringify({ levels, concurrency, n, p50Ms: +r.p50.toFixed(3), p99Ms: +r.p99.toFixed(3), perSecond: Math.round(r.perSecond) }));
    }
  }
} finally {
  if (client.destroy) client.destroy();
  else client.disconnect!();
}
