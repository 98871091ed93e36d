import pg from "pg";
import type { LoadSpec } from "./load.js";
import type { BatchSizes } from "./modes.js";
import type { Proc } from "./procs.js";
import { table } from "./report.js";
import { round, summary } from "./stats.js";

/**
 * Batches beside interactive traffic (issue #30): interactive TTFT p50 on
 * one gateway while a batch runs through it, against the same gateway with
 * no batch, rounds alternated (alone, beside, beside, alone, …). The
 * provider has maxConcurrent 16 and batch.maxShare 0.25, so the batch runs
 * four lines at once (batch.concurrency is 8: the gate, not the runner,
 * holds it back). The batch's lines stream 20 tokens each, 5 ms apart,
 * and the database is a PostgreSQL server outside the gateway, as in
 * production (SLUICE_BENCH_POSTGRES_URL, default the machine's).
 */

export interface BatchDeps {
  /** A gateway of the benchmark's own with these config sections, its `sim` provider given `provider`'s fields too. */
  readonly startGateway: (config: Record<string, unknown>, provider: Record<string, unknown>) => Promise<{ proc: Proc; url: string }>;
  readonly load: <T>(spec: LoadSpec) => Promise<T>;
  readonly simReset: () => Promise<void>;
  readonly log: (line: string) => void;
}

/** The PostgreSQL server the run uses (the machine's, as the tests do). */
const POSTGRES_URL = process.env.SLUICE_BENCH_POSTGRES_URL ?? "postgres://postgres:postgres@127.0.0.1:5432/postgres";
const MAX_CONCURRENT = 16;
const MAX_SHARE = 0.25;
const LINE_PROMPT = "#sim tokens=20 delay_ms=5";

interface BatchView {
  readonly status: string;
  readonly request_counts: { readonly total: number; readonly completed: number; readonly failed: number };
}

async function json<T>(res: Response): Promise<T> {
  if (!res.ok) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Polls the batch until `done` holds (a benchmark may poll; tests wait on events). */
async function until(url: string, id: string, done: (b: BatchView) => boolean, timeoutMs = 120_000): Promise<BatchView> {
  const end = performance.now() + timeoutMs;
  for (;;) {
    const batch = await json<BatchView>(await fetch(`${url}/v1/batches/${id}`));
    if (done(batch)) return batch;
    if (performance.now() > end) throw new Error(`batch ${id}: still ${batch.status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function batchScenario(sizes: BatchSizes, deps: BatchDeps) {
  // A database of the run's own on the PostgreSQL server (PGlite behind pglite-socket is one session: the
  // lines' concurrent transactions would interleave in it).
  const server = new pg.Client({ connectionString: POSTGRES_URL });
  await server.connect();
  const name = `sluice_bench_batch_${process.pid}`;
  await server.query(`DROP DATABASE IF EXISTS ${name}`);
  await server.query(`CREATE DATABASE ${name}`);
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  const gw = await deps.startGateway({ store: { postgres: { url: url.toString(), poolSize: 4 } }, batch: { concurrency: 8, maxShare: MAX_SHARE, maxLines: sizes.lines } }, { maxConcurrent: MAX_CONCURRENT });
  const target = { kind: "sluice-grpc" as const, url: gw.url, model: "bench" };
  const ttftRun = async () => {
    const r = await deps.load<{ samples: number[]; errors: number }>({ scenario: "ttft", target, concurrency: sizes.concurrency, perLane: Math.ceil(sizes.streamsPerRound / sizes.concurrency), prompt: "#sim tokens=2" });
    return { p50: summary(r.samples).p50, errors: r.errors };
  };
  const runs: Record<"alone" | "beside", Array<{ p50: number; errors: number }>> = { alone: [], beside: [] };
  /** Lines the batch finished while each `beside` run's load was on: proof the batch ran beside it. */
  const linesDuring: number[] = [];
  try {
    const lines = Array.from({ length: sizes.lines }, (_, i) =>
      JSON.stringify({ custom_id: `l${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "bench", messages: [{ role: "user", content: `${LINE_PROMPT}\nline ${i}` }] } }),
    ).join("\n");
    const form = new FormData();
    form.set("purpose", "batch");
    form.set("file", new Blob([lines]), "bench.jsonl");
    // The first batch call opens the database; the warm-up runs while it does.
    const file = await json<{ id: string }>(await fetch(`${gw.url}/v1/files`, { method: "POST", body: form }));
    await deps.load({ scenario: "ttft", target, concurrency: sizes.concurrency, perLane: 50, prompt: "#sim tokens=2" });

    const beside = async () => {
      const created = await json<{ id: string }>(
        await fetch(`${gw.url}/v1/batches`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" }) }),
      );
      // Running at its share before the load starts.
      const started = await until(gw.url, created.id, (b) => b.request_counts.completed >= 8);
      const run = await ttftRun();
      const after = await json<BatchView>(await fetch(`${gw.url}/v1/batches/${created.id}`));
      if (after.status !== "in_progress") throw new Error(`the batch ended (${after.status}) before the interactive load did: make batch.lines larger`);
      linesDuring.push(after.request_counts.completed - started.request_counts.completed);
      await fetch(`${gw.url}/v1/batches/${created.id}/cancel`, { method: "POST" });
      await until(gw.url, created.id, (b) => b.status === "cancelled");
      return run;
    };
    for (let round = 0; round < sizes.rounds; round++) {
      for (const side of round % 2 === 0 ? (["alone", "beside"] as const) : (["beside", "alone"] as const)) {
        runs[side].push(side === "alone" ? await ttftRun() : await beside());
        await deps.simReset();
      }
    }
  } finally {
    await gw.proc.stop();
    await server.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await server.end();
  }
  const ratios = runs.beside.map((r, i) => r.p50 / runs.alone[i]!.p50);
  const result = {
    maxConcurrent: MAX_CONCURRENT,
    maxShare: MAX_SHARE,
    concurrency: sizes.concurrency,
    streamsPerRound: sizes.streamsPerRound,
    rounds: sizes.rounds,
    ttftP50Ms: { alone: summary(runs.alone.map((r) => r.p50)).p50, beside: summary(runs.beside.map((r) => r.p50)).p50 },
    /** Each round's beside ÷ alone (adjacent runs), and their median: the figure the goal reads. */
    roundRatios: ratios,
    ratio: summary(ratios).p50,
    linesDuringLoad: linesDuring,
    errors: [...runs.alone, ...runs.beside].reduce((n, r) => n + r.errors, 0),
  };
  deps.log(
    `batch: interactive TTFT p50 ${round(result.ttftP50Ms.alone, 3)} ms alone, ${round(result.ttftP50Ms.beside, 3)} ms beside a batch (median of rounds ×${round(result.ratio, 3)}: ${ratios.map((r) => round(r)).join(" ")}); batch lines finished during each load ${linesDuring.join(", ")}`,
  );
  return result;
}

export type BatchResult = Awaited<ReturnType<typeof batchScenario>>;

export function batchSection(r: BatchResult): string {
  return [
    `## 9e. Batches beside interactive traffic (issue #30): interactive TTFT p50, gRPC, ${r.concurrency} streams at once, ${r.streamsPerRound} per run, with and without a batch running (provider maxConcurrent ${r.maxConcurrent}, batch.maxShare ${r.maxShare}), ${r.rounds} alternated rounds`,
    table(
      ["", "TTFT p50 ms (median of rounds)", "ratio (median of rounds)"],
      [
        ["no batch", round(r.ttftP50Ms.alone, 3), "1.00"],
        [`a batch running (lines finished during each load: ${r.linesDuringLoad.join(", ")})`, round(r.ttftP50Ms.beside, 3), String(round(r.ratio, 3))],
      ],
    ),
    "",
  ].join("\n");
}
