import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { stringify } from "yaml";
import { simulatedText } from "../src/simulator/text.js";
import { BENCH_TIMEOUTS, launchGateway } from "./gateway-launch.js";
import type { LoadSpec } from "./load.js";
import { SIZES } from "./modes.js";
import { type Proc, runJson, startUntil } from "./procs.js";
import { table } from "./report.js";
import { round, summary } from "./stats.js";
import type { TargetSpec } from "./targets.js";

/**
 * Two builds of the gateway, A and B (two checkouts, each built), compared
 * in one run on one simulator: what a change's commit message quotes as
 * "same-run A/B against the commit before". A full bench run measures one
 * build beside a direct baseline; two such runs on this shared machine
 * differ by more than most changes do, so the sides alternate in rounds
 * (A B B A …) and every ratio is the median of the rounds' own ratios.
 *
 *   node dist/bench/ab.js --a <dirA> --b <dirB> [--quick] [--rounds N] [--port-base P]
 */
const { values: args } = parseArgs({
  options: {
    a: { type: "string" },
    b: { type: "string" },
    quick: { type: "boolean", default: false },
    rounds: { type: "string" },
    /**
     * CPU runs of A and B at the same moments (each its own load generator)
     * instead of one after the other: the machine's load then varies for
     * both alike, at the price of both competing for the same cores.
     */
    together: { type: "boolean", default: false },
    /** The simulator listens on P, gateway A on P+1, B on P+2; any free ports without it. */
    "port-base": { type: "string" },
  },
});

type Side = "a" | "b";
type Edge = "grpc" | "sse";
const EDGES: readonly Edge[] = ["grpc", "sse"];
const SIZE = SIZES[args.quick ? "quick" : "full"].ab;
const ROUNDS = args.rounds === undefined ? SIZE.rounds : Number(args.rounds);
const ROOT = process.cwd();
const LOAD = join(ROOT, "dist/bench/load.js");
const RESULTS = join(ROOT, "bench/results");
const TTFT_PROMPT = "#sim tokens=2";
/** The throughput scenario's load: 10 streams of a zero-delay upstream. */
const CPU_STREAMS = 10;

function log(message: string): void {
  process.stderr.write(`[ab ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** The checkout's commit, `-dirty` when its working tree differs from it. */
function commitOf(dir: string): string {
  try {
    return execFileSync("git", ["-C", dir, "describe", "--always", "--dirty", "--abbrev=7"], { encoding: "utf8" }).trim();
  } catch {
    return "?";
  }
}

function target(url: string, edge: Edge): TargetSpec {
  return edge === "grpc" ? { kind: "sluice-grpc", url, model: "bench" } : { kind: "sluice-sse", url: `${url}/v1`, model: "bench" };
}

const load = <T>(spec: LoadSpec) => runJson<T>([LOAD, JSON.stringify(spec)], 300_000);

/** The gateway's own CPU seconds per 100k upstream deltas (counted by text: the gRPC edge merges deltas that arrive together). */
async function cpuPer100k(gateway: Proc, spec: TargetSpec): Promise<{ value: number; errors: number }> {
  const before = gateway.cpuSeconds();
  const r = await load<{ chars: number; errors: number }>({ scenario: "throughput", target: spec, concurrency: CPU_STREAMS, prompt: `#sim tokens=${SIZE.tokens}` });
  const deltas = r.chars / (simulatedText(1, SIZE.tokens).length / SIZE.tokens);
  return { value: ((gateway.cpuSeconds() - before) / Math.max(1, deltas)) * 100_000, errors: r.errors };
}

interface Rounds {
  ttft: Record<Edge, Record<Side, number[][]>>;
  cpu: Record<Edge, Record<Side, number[]>>;
  errors: number;
}

/** The middle value, or the mean of the two middle ones: a nearest-rank p50 of an even number of rounds would always take the lower. */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** One row: A, B, the median of the rounds' B÷A with their range, and for TTFT the median of the rounds' B−A. */
function row(a: number, b: number, ratios: number[], diffs?: number[]) {
  return { a, b, ratio: median(ratios), ratioRange: [Math.min(...ratios), Math.max(...ratios)] as const, ...(diffs ? { diff: median(diffs) } : {}) };
}

function results(r: Rounds) {
  const rows: Record<string, ReturnType<typeof row>> = {};
  for (const edge of EDGES) {
    const { a, b } = r.ttft[edge];
    for (const p of [50, 99] as const) {
      const at = (samples: number[]) => (p === 50 ? summary(samples).p50 : summary(samples).p99);
      const perRound = a.map((_, i) => ({ a: at(a[i]!), b: at(b[i]!) }));
      rows[`ttft-p${p}-${edge}`] = row(
        at(a.flat()),
        at(b.flat()),
        perRound.map((x) => x.b / x.a),
        perRound.map((x) => x.b - x.a),
      );
    }
  }
  for (const edge of EDGES) {
    const { a, b } = r.cpu[edge];
    rows[`cpu-${edge}`] = row(
      median(a),
      median(b),
      a.map((x, i) => b[i]! / x),
    );
  }
  return rows;
}

const LABELS: Record<string, string> = {
  "ttft-p50-grpc": "TTFT p50, 1 stream, gRPC (ms)",
  "ttft-p99-grpc": "TTFT p99, 1 stream, gRPC (ms)",
  "ttft-p50-sse": "TTFT p50, 1 stream, SSE Chat Completions (ms)",
  "ttft-p99-sse": "TTFT p99, 1 stream, SSE Chat Completions (ms)",
  "cpu-grpc": "gateway CPU s per 100k deltas, gRPC",
  "cpu-sse": "gateway CPU s per 100k deltas, SSE Chat Completions",
};

const signed = (n: number) => `${n >= 0 ? "+" : "−"}${Math.abs(round(n)).toFixed(2)}`;
const times = (n: number) => `×${round(n).toFixed(2)}`;

function report(a: string, b: string, rows: ReturnType<typeof results>, errors: number): string {
  const commitLine =
    `bench A/B, same run (${ROUNDS} rounds a side, A B B A${args.together ? ", CPU runs side by side" : ""}; ${a} → ${b}): ` +
    `gateway CPU per delta ${times(rows["cpu-grpc"]!.ratio)} gRPC, ${times(rows["cpu-sse"]!.ratio)} SSE; ` +
    `TTFT p50 at 1 stream ${signed(rows["ttft-p50-grpc"]!.diff!)} ms (${times(rows["ttft-p50-grpc"]!.ratio)}) gRPC, ` +
    `${signed(rows["ttft-p50-sse"]!.diff!)} ms (${times(rows["ttft-p50-sse"]!.ratio)}) SSE`;
  return [
    `# Sluice A/B: ${a} → ${b}`,
    "",
    `Machine: ${cpus().length} cores, Node ${process.version}, load average ${loadavg()
      .map((l) => round(l, 1))
      .join(" ")} at the end. ${ROUNDS} rounds a side, alternated A B B A. ` +
      `TTFT: ${SIZE.ttftPerRound} one-stream requests a round (\`${TTFT_PROMPT}\`), A and B interleaved request by request in one load generator; A and B columns pool every round's samples. ` +
      `CPU: ${CPU_STREAMS} streams × ${SIZE.tokens.toLocaleString("en")} tokens, zero-delay upstream, each gateway's own CPU from /proc, ${args.together ? "A and B at the same moments" : "A and B one after the other"}; A and B columns are the rounds' medians. ` +
      `B÷A and B−A are medians of the rounds' own (range: lowest and highest round).${errors ? ` **${errors} streams failed.**` : ""}`,
    "",
    table(
      ["", "A", "B", "B÷A", "rounds' B÷A", "B−A"],
      Object.entries(rows).map(([k, r]) => [LABELS[k]!, round(r.a, 3), round(r.b, 3), times(r.ratio), `${round(r.ratioRange[0]).toFixed(2)}–${round(r.ratioRange[1]).toFixed(2)}`, r.diff === undefined ? "" : `${signed(r.diff)} ms`]),
    ),
    "",
    "For the commit message:",
    "",
    `    ${commitLine}`,
    "",
  ].join("\n");
}

async function writeConfig(simOpenAi: string): Promise<string> {
  const file = join(await mkdtemp(join(tmpdir(), "sluice-ab-")), "sluice.yaml");
  await writeFile(file, stringify({ log: { level: "info" }, providers: { sim: { kind: "openai", baseUrl: simOpenAi, timeouts: BENCH_TIMEOUTS } }, models: { bench: { provider: "sim", model: "sim-1" } } }));
  return file;
}

async function main(): Promise<void> {
  if (args.a === undefined || args.b === undefined) throw new Error("usage: node dist/bench/ab.js --a <dirA> --b <dirB> [--quick] [--rounds N] [--port-base P]");
  const dirs: Record<Side, string> = { a: resolve(args.a), b: resolve(args.b) };
  for (const dir of Object.values(dirs)) if (!existsSync(join(dir, "dist/src/main.js"))) throw new Error(`${dir}/dist/src/main.js: not built (npm run build there first)`);
  const label: Record<Side, string> = { a: `A ${commitOf(dirs.a)}`, b: `B ${commitOf(dirs.b)}` };
  const base = args["port-base"] === undefined ? undefined : Number(args["port-base"]);
  const port = (offset: number) => (base === undefined ? 0 : base + offset);
  const { proc: sim, value: simInfo } = await startUntil(process.execPath, ["dist/src/simulator/main.js", "--port", String(port(0))], (line) =>
    line.startsWith("{") && line.includes("simulator listening") ? (JSON.parse(line) as { origin: string; openAiBaseUrl: string }) : undefined,
  );
  const config = await writeConfig(simInfo.openAiBaseUrl);
  const gateways: Partial<Record<Side, { proc: Proc; url: string }>> = {};
  try {
    gateways.a = await launchGateway(dirs.a, config, port(1));
    gateways.b = await launchGateway(dirs.b, config, port(2));
    const gw = gateways as Record<Side, { proc: Proc; url: string }>;
    log(`${label.a} (${dirs.a}) at ${gw.a.url}, ${label.b} (${dirs.b}) at ${gw.b.url}`);
    const simReset = () => fetch(`${simInfo.origin}/_sim/reset`, { method: "POST" });
    // A fresh gateway's first thousand streams cost about twice the CPU of later ones.
    for (const side of ["a", "b"] as const) {
      for (const edge of EDGES) {
        await load({ scenario: "ttft", target: target(gw[side].url, edge), ...SIZE.warmUp, prompt: TTFT_PROMPT });
        await cpuPer100k(gw[side].proc, target(gw[side].url, edge));
      }
    }
    await simReset();
    const r: Rounds = { ttft: { grpc: { a: [], b: [] }, sse: { a: [], b: [] } }, cpu: { grpc: { a: [], b: [] }, sse: { a: [], b: [] } }, errors: 0 };
    for (let i = 0; i < ROUNDS; i++) {
      const order: [Side, Side] = i % 2 === 0 ? ["a", "b"] : ["b", "a"];
      for (const edge of EDGES) {
        const t = await load<{ samples: number[]; errors: number; alternateSamples: number[]; alternateErrors: number }>({
          scenario: "ttft",
          target: target(gw[order[0]].url, edge),
          alternate: target(gw[order[1]].url, edge),
          concurrency: 1,
          perLane: SIZE.ttftPerRound,
          prompt: TTFT_PROMPT,
        });
        r.ttft[edge][order[0]].push(t.samples);
        r.ttft[edge][order[1]].push(t.alternateSamples);
        r.errors += t.errors + t.alternateErrors;
      }
      for (const edge of EDGES) {
        const measure = (side: Side) => cpuPer100k(gw[side].proc, target(gw[side].url, edge));
        const c = args.together ? await Promise.all(order.map(measure)) : [await measure(order[0]), await measure(order[1])];
        order.forEach((side, k) => {
          r.cpu[edge][side].push(c[k]!.value);
          r.errors += c[k]!.errors;
        });
      }
      await simReset();
      const p50 = (s: Side, e: Edge) => round(summary(r.ttft[e][s].at(-1)!).p50);
      log(
        `round ${i + 1}/${ROUNDS} (${order.join(" ").toUpperCase()}): TTFT p50 gRPC ${p50("a", "grpc")} / ${p50("b", "grpc")} ms, SSE ${p50("a", "sse")} / ${p50("b", "sse")} ms; CPU s/100k gRPC ${round(r.cpu.grpc.a.at(-1)!)} / ${round(r.cpu.grpc.b.at(-1)!)}, SSE ${round(r.cpu.sse.a.at(-1)!)} / ${round(r.cpu.sse.b.at(-1)!)}`,
      );
    }
    const rows = results(r);
    const md = report(label.a, label.b, rows, r.errors);
    await mkdir(RESULTS, { recursive: true });
    await writeFile(join(RESULTS, "ab.md"), md);
    await writeFile(
      join(RESULTS, "ab.json"),
      `${JSON.stringify({ a: { dir: dirs.a, commit: commitOf(dirs.a) }, b: { dir: dirs.b, commit: commitOf(dirs.b) }, rounds: ROUNDS, sizes: SIZE, errors: r.errors, results: rows, together: args.together, raw: { cpu: r.cpu, ttftP50: mapP50(r) } }, null, 2)}\n`,
    );
    process.stdout.write(md);
  } finally {
    await Promise.all([gateways.a?.proc.stop(), gateways.b?.proc.stop(), sim.stop()]);
  }
}

/** Each round's TTFT p50 per edge and side, for the JSON: the samples themselves are too many to keep. */
function mapP50(r: Rounds) {
  return Object.fromEntries(EDGES.map((e) => [e, { a: r.ttft[e].a.map((s) => round(summary(s).p50, 3)), b: r.ttft[e].b.map((s) => round(summary(s).p50, 3)) }]));
}

main().catch((error: unknown) => {
  process.stderr.write(`ab: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
