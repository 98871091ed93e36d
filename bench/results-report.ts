import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type BatchResult, batchSection } from "./batch.js";
import { goals } from "./goals.js";
import { type HeadOfLineResult, headOfLineSection } from "./head-of-line.js";
import { type McpResult, mcpSection } from "./mcp.js";
import { chartName, type Mode, resultsName, SIZES } from "./modes.js";
import { type NeedsResult, needsSection } from "./needs.js";
import { type PiiResult, piiSection } from "./pii.js";
import { type PublicProfileResult, publicProfileSection } from "./public-profile.js";
import { lineChart, table } from "./report.js";
import { type resumableSummary, type resumeScenario, resumeSection } from "./resume.js";
import { type admissionScenario, admissionSection } from "./scenarios/admission.js";
import type { cacheScenario } from "./scenarios/cache.js";
import type { cancelScenario } from "./scenarios/cancel.js";
import type { capacityScenario } from "./scenarios/capacity.js";
import type { failoverScenario } from "./scenarios/failover.js";
import type { hedgeScenario } from "./scenarios/hedge.js";
import type { ledgerScenario } from "./scenarios/ledger.js";
import { SEMANTIC_LOOKUPS } from "./scenarios/semantic.js";
import type { slowScenario } from "./scenarios/slow.js";
import type { telemetryScenario } from "./scenarios/telemetry.js";
import type { throughputScenario } from "./scenarios/throughput.js";
import type { ttftScenario } from "./scenarios/ttft.js";
import type { SemanticResult } from "./semantic.js";
import { log, type machine, NAMES, RESULTS } from "./services.js";
import { round } from "./stats.js";
import type { TargetKind } from "./targets.js";
import { type UploadResult, uploadSection } from "./upload.js";

export type Result = {
  mode: Mode;
  machine: ReturnType<typeof machine>;
  ttft: Awaited<ReturnType<typeof ttftScenario>>;
  throughput: Awaited<ReturnType<typeof throughputScenario>>;
  capacity: Awaited<ReturnType<typeof capacityScenario>>;
  cancel: Awaited<ReturnType<typeof cancelScenario>>;
  slow: Awaited<ReturnType<typeof slowScenario>>;
  failover: Awaited<ReturnType<typeof failoverScenario>>;
  hedge: Awaited<ReturnType<typeof hedgeScenario>>;
  telemetry: Awaited<ReturnType<typeof telemetryScenario>>;
  ledger: Awaited<ReturnType<typeof ledgerScenario>>;
  admission: Awaited<ReturnType<typeof admissionScenario>>;
  pii: PiiResult;
  needs: NeedsResult;
  batch: BatchResult;
  /** Runs before issue #47 have none. */
  upload?: UploadResult;
  resume: Awaited<ReturnType<typeof resumeScenario>>;
  resumable: ReturnType<typeof resumableSummary>;
  cache: Awaited<ReturnType<typeof cacheScenario>>;
  semantic: SemanticResult;
  /** Runs before the public profile existed have none. */
  publicProfile?: PublicProfileResult;
  /** Runs before issue #47 have none. */
  headOfLine?: HeadOfLineResult;
  /** Runs before issue #48 have none. */
  mcp?: McpResult;
  durationS: number;
};

export async function writeReport(r: Result): Promise<void> {
  const kinds = Object.keys(r.ttft.results) as TargetKind[];
  const gateways = kinds.filter((k) => k !== "direct");
  const direct = r.ttft.results.direct!;
  const overhead = (k: TargetKind, c: number, p: "p50" | "p99") => r.ttft.results[k]![c]![p] - direct[c]![p];

  const ttftRows = r.ttft.levels.flatMap((c) =>
    kinds.map((k) => [String(c), NAMES[k], r.ttft.results[k]![c]!.p50, r.ttft.results[k]![c]!.p99, k === "direct" ? "—" : round(overhead(k, c, "p50")), k === "direct" ? "—" : round(overhead(k, c, "p99")), r.ttft.results[k]![c]!.errors]),
  );
  const tp = r.throughput.results;
  const tpRows = (Object.keys(tp) as TargetKind[]).map((k) => [
    NAMES[k],
    Math.round(tp[k]!.deltasPerS),
    k === "direct" ? "1.00" : round(tp[k]!.deltasPerS / tp.direct!.deltasPerS),
    tp[k]!.gatewayCpuSPer100k ?? "—",
    round(tp[k]!.clientCpuSPer100k),
    tp[k]!.allCpuSPer100k,
    k === "direct" ? "1.00" : round(tp[k]!.allCpuSPer100k / tp.direct!.allCpuSPer100k),
    round(tp[k]!.messages / tp[k]!.deltas, 3),
    tp[k]!.errors,
  ]);
  const cRows = (Object.keys(r.cancel.results) as TargetKind[]).map((k) => {
    const c = r.cancel.results[k]!;
    const closed = `${r.cancel.total - c.notClosed}/${r.cancel.total}`;
    const none = "never closed";
    return c.closeMs.n === 0
      ? [NAMES[k], none, none, "—", "—", "—", "—", `${closed}: upstream kept generating after the client left`]
      : [
          NAMES[k],
          c.closeMs.p50,
          c.closeMs.p99,
          k === "direct" ? "—" : round(c.closeMs.p99 - r.cancel.results.direct!.closeMs.p99),
          c.clientSendMs ? `${round(c.clientSendMs.p50)} / ${round(c.clientSendMs.p99)}` : "—",
          c.tokensAfterAbort.p50,
          c.tokensAfterAbort.p99,
          closed,
        ];
  });
  const sRows = (Object.keys(r.slow.results) as TargetKind[]).map((k) => {
    const x = r.slow.results[k]!;
    return [NAMES[k], x.liveHeapKiBPerStream ?? "—", x.lateLiveHeapKiBPerStream ?? "—", x.rssGrowthKiBPerStream ?? "—", x.upstreamWrittenKiBPerStream, x.aheadOfClientKiBPerStream, x.potentialKiBPerStream];
  });
  const hedgeExtra = r.hedge.upstreamWith / r.hedge.requests - 1;
  const goalList = goals({ ...r, capacityWindowS: SIZES[r.mode].capacity.plateauWindowMs / 1000 });
  // Runs before the gRPC floor was measured have no row for it.
  const capKinds = (["floor-sse", "floor-grpc", "sluice-grpc", "sluice-sse"] as const).filter((k) => r.capacity.results[k] !== undefined);
  const capRows = capKinds.map((k) => {
    const c = r.capacity.results[k]!;
    const added = c.interTokenAddedMs;
    return [
      NAMES[k],
      `${c.completed}/${c.streams}`,
      c.failed,
      c.idleRssMiB,
      c.peakRssMiB,
      c.kibPerStream,
      c.liveHeapKibPerStream,
      c.eventLoopDelayP99Ms,
      round(c.gatewayCpuUsPerToken),
      `${round(added.p50)} / ${round(added.p99)} / ${round(added.max)}`,
      c.wallS,
    ];
  });
  const md = [
    `# Sluice benchmark (${r.mode})`,
    "",
    `${r.machine.date} — ${r.machine.cpus} × ${r.machine.model}, Node ${r.machine.node}; gateway, simulator, peer, the two floors (HTTP proxy, gRPC relay) and load generator as separate processes on 127.0.0.1; the gateways reach the simulator over HTTP/1.1. Ran ${round(r.durationS, 0)} s. Reproduce: \`npm run bench${r.mode === "quick" ? " -- --quick" : ""}\`.`,
    "",
    "## Goals",
    table(
      ["goal", "target", "measured", "met"],
      goalList.map((g) => [g.name, g.target, g.measured, g.met ? "yes" : "**no**"]),
    ),
    "",
    "## 1. Time to first token (ms), overhead = gateway − direct at the same concurrency",
    table(["concurrency", "path", "p50", "p99", "overhead p50", "overhead p99", "errors"], ttftRows),
    "",
    `## 2. Throughput (${r.throughput.concurrency} streams × ${r.throughput.tokens} tokens, zero-delay upstream)`,
    table(["path", "deltas/s", "ratio vs direct", "gateway CPU s / 100k deltas", "load generator CPU s / 100k deltas", "all processes CPU s / 100k deltas", "CPU ratio vs direct", "text messages per delta", "errors"], tpRows),
    "",
    `## 3. Capacity (${r.capacity.streams} concurrent streams, 1 token/s; each path on a fresh process, warmed first)`,
    "Inter-token added: for every text message after a stream's first, the gap since the stream's previous one minus 1 s per upstream token it completes, as the client sees it; every gap of every stream, the same way on every path. Figures are the carrying process's: the gateway's, or a floor's. The gRPC edge is held against the gRPC floor, the SSE facade against the HTTP floor (goal 3).",
    "",
    table(
      [
        "path",
        "completed",
        "failed",
        "idle RSS MiB",
        "peak RSS MiB",
        "RSS KiB per stream",
        "live JS heap KiB per stream (after GC)",
        `event-loop delay p99 ms (${SIZES[r.mode].capacity.plateauWindowMs / 1000} s at the plateau)`,
        "CPU µs per token",
        "inter-token added p50 / p99 / max ms",
        "wall s",
      ],
      capRows,
    ),
    "",
    `## 4. Cancellation (${r.cancel.total} streams aborted after 1–10 deltas, upstream 100 tokens/s)`,
    "Measured from when the cancel left the load generator: undici closes the socket inside abort(); an HTTP/2 client writes RST_STREAM in its loop's check phase, which a load generator busy with 50 streams reaches late (its own wait, shown apart).",
    "",
    table(["path", "cancel sent→upstream close p50 ms", "p99 ms", "p99 vs direct ms", "load generator's own send wait p50 / p99 ms", "tokens after abort p50", "p99", "upstream closed"], cRows),
    "",
    `## 5. Slow consumer (${r.slow.streams} clients reading one 4 KB delta per 50 ms for ${r.slow.durationMs / 1000} s)`,
    table(
      ["path", "gateway live heap KiB/stream (after GC)", "change from mid-run to end", "gateway RSS growth KiB/stream", "upstream wrote KiB/stream", "upstream ahead of client KiB/stream", "upstream could have written KiB/stream"],
      sRows,
    ),
    "",
    `## 6. Failover (${r.failover.requests} requests, 10 at a time; the primary resets 30% of connections before headers, a healthy backup)`,
    table(
      ["client-visible errors", "without failover", "failed over", "TTFT p50 / p99 served by the primary ms", "TTFT p50 / p99 after a failover ms", "failover cost p50 / p99 ms"],
      [
        [
          `${round(r.failover.errorRate * 100)}%`,
          `${round(r.failover.errorRateWithoutFailover * 100)}%`,
          r.failover.failedOver,
          `${round(r.failover.servedByPrimary.p50)} / ${round(r.failover.servedByPrimary.p99)}`,
          `${round(r.failover.failedOverTtft.p50)} / ${round(r.failover.failedOverTtft.p99)}`,
          `${round(r.failover.failedOverTtft.p50 - r.failover.servedByPrimary.p50)} / ${round(r.failover.failedOverTtft.p99 - r.failover.servedByPrimary.p99)}`,
        ],
      ],
    ),
    "",
    `## 7. Hedged first token (${r.hedge.requests} requests, 10 at a time; 1 in 20 primary first tokens takes 2 s; hedge after ${r.hedge.afterMs} ms)`,
    table(
      ["", "TTFT p50 ms", "TTFT p99 ms", "upstream requests", "extra upstream requests"],
      [
        ["without hedging", r.hedge.withoutHedge.p50, r.hedge.withoutHedge.p99, r.hedge.upstreamWithout, "—"],
        ["with hedging", r.hedge.withHedge.p50, r.hedge.withHedge.p99, r.hedge.upstreamWith, `${round(hedgeExtra * 100)}%`],
      ],
    ),
    "",
    "## 8. Telemetry cost (two gateways of their own on the same simulator, gRPC edge)",
    table(
      ["", "TTFT p50, 1 stream ms", "deltas/s (10 streams)", "gateway CPU s / 100k deltas", "CPU ratio vs off"],
      [
        ["off (no metrics, no exporter)", r.telemetry.off.ttftP50, Math.round(r.telemetry.off.deltasPerS), r.telemetry.off.gatewayCpuSPer100k, "1.00"],
        [`on (metrics + OTLP export, ${r.telemetry.spanExports} exports received)`, r.telemetry.on.ttftP50, Math.round(r.telemetry.on.deltasPerS), r.telemetry.on.gatewayCpuSPer100k, round(r.telemetry.cpuRatio)],
      ],
    ),
    "",
    admissionSection(r.admission),
    "",
    `## 9b. Spend ledger on vs off (three gateways of their own, the same Redis and key; ${r.ledger.calls} calls per round, ${r.ledger.rounds} rounds, medians)`,
    table(
      ["", "gateway CPU ms / 1,000 calls", "ratio vs off"],
      [
        ["ledger off", round(r.ledger.cpuSPer1kCalls.off * 1000), "1.00"],
        ["ledger on, embedded PGlite (in the gateway's process)", round(r.ledger.cpuSPer1kCalls.embedded * 1000), round(r.ledger.embeddedRatio)],
        [`ledger on, PostgreSQL by URL (${r.ledger.serverRows} rows written)`, round(r.ledger.cpuSPer1kCalls.server * 1000), round(r.ledger.serverRatio)],
      ],
    ),
    "",
    piiSection(r.pii),
    needsSection(r.needs),
    batchSection(r.batch),
    ...(r.upload ? [uploadSection(r.upload)] : []),
    resumeSection(r.resume),
    "",
    ...(r.publicProfile ? [publicProfileSection(r.publicProfile), ""] : []),
    `## 10. Response cache (issue #26): exact cache, gRPC edge, upstream TTFT ${r.cache.upstreamTtftMs} ms; a miss asks something new each time, a hit the same question`,
    table(
      ["path", ...r.cache.levels.map((c) => `TTFT p50 / p99 ms at ${c}`)],
      (["direct", "off", "miss", "hit"] as const).map((name) => [
        { direct: "direct (baseline)", off: "Sluice, alias without a cache", miss: "Sluice, exact cache, miss", hit: "Sluice, exact cache, hit" }[name],
        ...r.cache.levels.map((c) => `${round(r.cache.results[name]![c]!.p50)} / ${round(r.cache.results[name]![c]!.p99)}`),
      ]),
    ),
    "",
    `Semantic cache: nearest-entry lookup (the embedding call excluded) at ${r.semantic.entries} stored ${r.semantic.dims}-dimension vectors in one alias and scope, HNSW with iterative scan, ${SEMANTIC_LOOKUPS[r.mode]} lookups each.`,
    table(
      ["store", "lookup p50 ms", "lookup p99 ms", "index build s"],
      [
        ["PGlite (embedded)", round(r.semantic.lookupMs.pglite.p50), round(r.semantic.lookupMs.pglite.p99), round(r.semantic.lookupMs.pglite.indexBuildS)],
        ["server by URL (PGlite over the wire)", round(r.semantic.lookupMs.url.p50), round(r.semantic.lookupMs.url.p99), round(r.semantic.lookupMs.url.indexBuildS)],
      ],
    ),
    "",
    `Semantic cache, a miss (every question new: embedded, looked up, stored after it completed), 1 stream, TTFT p50 / p99 ms; the embedding call is the simulator's /embeddings called straight, in the same rounds:`,
    table(
      ["store", "alias without a cache", "semantic miss", "added p50", "embedding call"],
      (["pglite", "url"] as const).map((m) => {
        const x = r.cache.semanticMiss[m];
        return [
          m === "pglite" ? "PGlite (embedded)" : "server by URL (PGlite over the wire)",
          `${round(x.results.off.p50)} / ${round(x.results.off.p99)}`,
          `${round(x.results.semanticMiss.p50)} / ${round(x.results.semanticMiss.p99)}`,
          `+${round(x.addedMs)}`,
          `${round(x.results.embed.p50)} / ${round(x.results.embed.p99)}`,
        ];
      }),
    ),
    "",
    `The simulator's embedding model on the evaluation set (bench/paraphrases.ts: ${r.semantic.pairs.positives} reworded pairs, ${r.semantic.pairs.negatives} hard negatives sharing their wording):`,
    table(
      ["threshold", "hit rate (reworded pairs at or past it)", "false-hit rate (negatives at or past it)"],
      r.semantic.thresholds.map((t) => [t.threshold, `${round(t.hitRate * 100)}%`, `${round(t.falseHitRate * 100)}%`]),
    ),
    "",
    r.headOfLine ? headOfLineSection(r.headOfLine) : "",
    "",
    r.mcp ? mcpSection(r.mcp) : "",
  ].join("\n");

  const svg = lineChart(
    "TTFT overhead vs concurrency (gateway − direct)",
    "concurrent streams",
    "overhead (ms)",
    gateways.flatMap((k, i) => [
      { name: `${NAMES[k]} p50`, color: ["#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#7f7f7f", "#bcbd22"][i % 7]!, points: r.ttft.levels.map((c) => ({ x: c, y: overhead(k, c, "p50") })) },
      { name: `${NAMES[k]} p99`, color: ["#6baed6", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#c7c7c7", "#dbdb8d"][i % 7]!, points: r.ttft.levels.map((c) => ({ x: c, y: overhead(k, c, "p99") })) },
    ]),
  );
  const name = resultsName(r.mode);
  await writeFile(join(RESULTS, `${name}.json`), `${JSON.stringify({ ...r, goals: goalList }, null, 2)}\n`);
  await writeFile(join(RESULTS, `${name}.md`), md);
  await writeFile(join(RESULTS, chartName(r.mode)), svg);
  process.stdout.write(`${md}\n`);
  log(`wrote bench/results/${name}.{json,md} and the TTFT chart`);
}
