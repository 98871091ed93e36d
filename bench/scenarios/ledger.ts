import { BENCH_BUDGET, BENCH_KEY, BENCH_LIMITS, freePort, load, log, type Services, simReset, startGateway } from "../services.js";
import { round, summary } from "../stats.js";

// Ledger on vs off --------------------------------------------------------------
/**
 * What writing the spend ledger costs the gateway per call: three gateways
 * on the same Redis (own prefixes) and the same virtual key, one without
 * the ledger, one with it on the embedded database (PGlite in the gateway's
 * own process: the default, and the worst case for the gateway's CPU), one
 * on a PostgreSQL server by URL (PGlite behind pglite-socket in this
 * process, so the database's CPU is not the gateway's, as in production).
 * Same calls, alternated per round; gateway CPU seconds per 1,000 calls.
 */
export async function ledgerScenario(s: Services) {
  const { PGlite } = await import("@electric-sql/pglite");
  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
  const { vector } = await import("@electric-sql/pglite-pgvector");
  const { createHash } = await import("node:crypto");
  const db = await PGlite.create({ extensions: { vector } });
  const port = await freePort();
  const server = new PGLiteSocketServer({ db, port, host: "127.0.0.1", maxConnections: 8 });
  await server.start();
  const keyed = (name: string, extra: Record<string, unknown>) => ({
    auth: { keys: [{ name: "bench", sha256: createHash("sha256").update(BENCH_KEY).digest("hex"), limits: BENCH_LIMITS, budget: BENCH_BUDGET }] },
    store: { redis: { url: `redis://127.0.0.1:${s.redisPort}`, prefix: `sluice-bench-ledger-${name}:${process.pid}:`, failMode: "closed", timeoutMs: 2_000 }, ...extra },
  });
  const sides = {
    off: await startGateway(s, { ...keyed("off", {}), ledger: { enabled: false } }),
    embedded: await startGateway(s, keyed("embedded", { postgres: {} })),
    server: await startGateway(s, keyed("server", { postgres: { url: `postgres://postgres@127.0.0.1:${port}/postgres`, poolSize: 4 } })),
  };
  const { calls, rounds } = s.size.ledger;
  const runs: Record<keyof typeof sides, number[]> = { off: [], embedded: [], server: [] };
  try {
    for (const [name, gw] of Object.entries(sides)) {
      // Warm-up, which also opens each database (the embedded one takes seconds) before anything is measured.
      await load({ scenario: "ttft", target: { kind: "sluice-grpc", url: gw.url, model: "bench", apiKey: BENCH_KEY }, concurrency: 10, perLane: LEDGER_WARM_UP / 10, prompt: "#sim tokens=2" });
      if (name !== "off") await waitForLedgerRows(gw.url, LEDGER_WARM_UP);
    }
    // Off and server alternate; the embedded side runs its rounds after them, since its database works on in the
    // background and would share the cores with whichever side ran next.
    const plan = [...Array.from({ length: rounds }, (_, r) => (r % 2 === 0 ? (["off", "server"] as const) : (["server", "off"] as const))).flat(), ...Array.from({ length: rounds }, () => "embedded" as const)];
    const done: Record<keyof typeof sides, number> = { off: 0, embedded: 0, server: 0 };
    for (const name of plan) {
      const gw = sides[name];
      const before = gw.proc.cpuSeconds();
      await load({ scenario: "ttft", target: { kind: "sluice-grpc", url: gw.url, model: "bench", apiKey: BENCH_KEY }, concurrency: 10, perLane: Math.ceil(calls / 10), prompt: "#sim tokens=2" });
      const loaded = performance.now();
      done[name]++;
      // The ledger writes after the calls (every ledger.flushMs): its CPU counts once what it wrote is in. The
      // server's rows are counted in the database (nothing asked of the gateway); the embedded one's only the
      // gateway can tell, through /metrics, read once a second so that scraping costs it little.
      const expected = LEDGER_WARM_UP + done[name] * Math.ceil(calls / 10) * 10;
      if (name === "server") await waitForRows(async () => Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM sluice_ledger")).rows[0]!.n), expected);
      if (name === "embedded") await waitForLedgerRows(gw.url, expected, 1_000);
      // Every side idles as long after its calls (at least two flush intervals), so idle work is in all of them alike.
      const idle = LEDGER_SETTLE_MS - (performance.now() - loaded);
      if (idle > 0) await new Promise((resolve) => setTimeout(resolve, idle));
      runs[name].push(((gw.proc.cpuSeconds() - before) / calls) * 1_000);
      await simReset(s);
    }
    const median = (xs: number[]) => summary(xs).p50;
    const off = median(runs.off);
    const result = {
      cpuSPer1kCalls: { off, embedded: median(runs.embedded), server: median(runs.server) },
      embeddedRatio: median(runs.embedded) / off,
      serverRatio: median(runs.server) / off,
      serverRows: Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM sluice_ledger")).rows[0]!.n),
      runs,
      calls,
      rounds,
    };
    log(
      `ledger: gateway CPU per 1,000 calls off ${round(off * 1000)} ms, embedded ${round(result.cpuSPer1kCalls.embedded * 1000)} ms (×${round(result.embeddedRatio)}), server ${round(result.cpuSPer1kCalls.server * 1000)} ms (×${round(result.serverRatio)})`,
    );
    return result;
  } finally {
    await Promise.all(Object.values(sides).map((g) => g.proc.stop()));
    await server.stop();
    await db.close();
  }
}

/** Calls each side of the ledger comparison makes before anything is measured (the JIT's warm-up, the database's opening). */
export const LEDGER_WARM_UP = 1_000;

/** How long after its calls each side of the ledger comparison is measured: two flush intervals and some. */
export const LEDGER_SETTLE_MS = 1_500;

/** Waits until `count()` reaches `rows`, asking every `everyMs`. */
export async function waitForRows(count: () => Promise<number>, rows: number, everyMs = 100, timeoutMs = 120_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const n = await count();
    if (n >= rows) return;
    if (performance.now() > deadline) throw new Error(`ledger: ${n} rows written, ${rows} expected`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Waits until a gateway's ledger has written `rows` rows, read from its /metrics (sluice_ledger_rows_total, result written). */
export function waitForLedgerRows(url: string, rows: number, everyMs = 100): Promise<void> {
  return waitForRows(
    async () => {
      const text = await (await fetch(`${url}/metrics`)).text();
      return Number(/^sluice_ledger_rows_total\{[^}]*sluice_ledger_result="written"[^}]*\} (\d+)/m.exec(text)?.[1] ?? 0);
    },
    rows,
    everyMs,
  );
}
