import type { AgentSizes } from "./agents.js";
import type { HeadOfLineSizes } from "./head-of-line.js";
import type { McpSizes } from "./mcp.js";
import type { UploadSizes } from "./upload.js";
/**
 * What a benchmark run measures, by mode, in one table. The full run's
 * figures are the ones committed (bench/results/latest.*) and quoted in
 * bench/README.md. The quick run is a look at every scenario at smaller sizes, fewer
 * repetitions and shorter warm-ups (a few minutes on a shared 2-core
 * machine), never compared against the full one.
 */
export type Mode = "full" | "quick";

export interface Sizes {
  readonly ttft: {
    readonly levels: readonly number[];
    /** Streams per target at each level above 1; a quarter of them at concurrency 1. */
    readonly streams: number;
    readonly warmUp: { readonly concurrency: number; readonly perLane: number };
    /** A short warm-up at each level before each measurement, besides the first one. */
    readonly warmUpEachLevel: boolean;
  };
  readonly throughput: { readonly tokens: number };
  readonly capacity: { readonly streams: number; readonly tokens: number; readonly plateauWindowMs: number };
  /** `tokens`: each upstream stream's length; a path that never closes upstream keeps the simulator busy that long. */
  readonly cancel: { readonly total: number; readonly tokens: number };
  readonly slow: { readonly streams: number; readonly durationMs: number };
  readonly failover: { readonly requests: number };
  readonly hedge: { readonly requests: number };
  readonly telemetry: { readonly tokens: number; readonly streams: number; readonly rounds: number };
  readonly admission: { readonly streamsPerLevel: number; readonly rounds: number };
  /** Keyed calls per round and side, and rounds, of the ledger's on/off comparison. */
  readonly ledger: { readonly calls: number; readonly rounds: number };
  readonly resume: ResumeSizes;
  readonly pii: PiiSizes;
  readonly needs: NeedsSizes;
  readonly batch: BatchSizes;
  /** A batch-file upload beside the streams (issue #47): its size in MiB. */
  readonly upload: UploadSizes;
  readonly agents: AgentSizes;
  readonly ab: AbSizes;
  readonly publicProfile: PublicProfileSizes;
  readonly keyFlood: KeyFloodSizes;
  readonly headOfLine: HeadOfLineSizes;
  readonly mcp: McpSizes;
}

/**
 * The public streaming profile (bench/public-profile.ts): the concurrencies
 * climbed, with the streams each lane runs there one after another (every
 * stream lasts about 1.3 s: 64 deltas 20 ms apart), and fast streams run
 * unmeasured first on each path at each level.
 */
export interface PublicProfileSizes {
  readonly levels: ReadonlyArray<{ readonly concurrency: number; readonly perLane: number }>;
  readonly warmUpStreams: number;
}

/**
 * Key flood (issue #47): invalid-key requests a second asked for (the
 * client paces them; on a shared 2-core machine it may reach fewer, and
 * says so), each side's duration, alternated rounds (a flood side and an
 * alone side each), the valid streams at once, and the flood client's
 * keep-alive connections and requests pipelined on each.
 */
export interface KeyFloodSizes {
  readonly ratePerS: number;
  readonly durationMs: number;
  readonly rounds: number;
  readonly concurrency: number;
  readonly connections: number;
  readonly pipelining: number;
}

/**
 * Comparing two builds (bench/ab.ts): rounds a side (alternated A B B A),
 * one-stream TTFT requests a round (half a side, interleaved), tokens of
 * each of the CPU run's 10 zero-delay streams, and the streams each edge
 * of each gateway serves unmeasured first.
 */
export interface AbSizes {
  readonly rounds: number;
  readonly ttftPerRound: number;
  readonly tokens: number;
  readonly warmUp: { readonly concurrency: number; readonly perLane: number };
}

/**
 * Routing by need (issue #29): the prompt's bytes, the TTFT comparison's
 * unmeasured streams per alias, its rounds (a load-generator run each, the
 * aliases alternated request by request, one stream at a time) and streams
 * per round and alias, routeByNeed's timed batches of 100 in process;
 * the counted conversation's target tokens and timed counts.
 */
/**
 * Batches beside interactive traffic (issue #30): lines in the batch (it
 * must outlast each interactive run), alternated rounds, interactive
 * streams per run and at once.
 */
export interface BatchSizes {
  readonly lines: number;
  readonly rounds: number;
  readonly streamsPerRound: number;
  readonly concurrency: number;
}

export interface NeedsSizes {
  readonly promptBytes: number;
  readonly warmUp: number;
  readonly rounds: number;
  readonly streamsPerRound: number;
  readonly routeBatches: number;
  readonly countTokens: number;
  readonly countRuns: number;
}

/** Timed screenings of the 4 KiB prompt; the restoring comparison's deltas per stream and interleaved rounds per alias. */
export interface PiiSizes {
  readonly iterations: number;
  readonly tokens: number;
  readonly rounds: number;
}

export interface ResumeSizes {
  readonly warmUp: number;
  readonly ttftPerRound: number;
  readonly tokens: number;
  readonly pairs: number;
  readonly samples: number;
}

export const SIZES: Readonly<Record<Mode, Sizes>> = {
  full: {
    ttft: { levels: [1, 100, 1000], streams: 1000, warmUp: { concurrency: 10, perLane: 100 }, warmUpEachLevel: true },
    throughput: { tokens: 10_000 },
    capacity: { streams: 10_000, tokens: 40, plateauWindowMs: 10_000 },
    cancel: { total: 1000, tokens: 1000 },
    slow: { streams: 50, durationMs: 5000 },
    failover: { requests: 600 },
    hedge: { requests: 600 },
    telemetry: { tokens: 10_000, streams: 300, rounds: 3 },
    admission: { streamsPerLevel: 2_400, rounds: 4 },
    ledger: { calls: 3_000, rounds: 5 },
    resume: { warmUp: 40, ttftPerRound: 300, tokens: 5_000, pairs: 12, samples: 200 },
    pii: { iterations: 2_000, tokens: 10_000, rounds: 20 },
    needs: { promptBytes: 4_096, warmUp: 200, rounds: 8, streamsPerRound: 200, routeBatches: 500, countTokens: 100_000, countRuns: 15 },
    batch: { lines: 4_000, rounds: 6, streamsPerRound: 400, concurrency: 4 },
    upload: { megabytes: 100 },
    agents: { levels: [1, 100], streams: 1_200, warmUp: 6 },
    ab: { rounds: 8, ttftPerRound: 400, tokens: 10_000, warmUp: { concurrency: 10, perLane: 100 } },
    publicProfile: {
      levels: [
        { concurrency: 1, perLane: 16 },
        { concurrency: 8, perLane: 4 },
        { concurrency: 32, perLane: 2 },
        { concurrency: 128, perLane: 2 },
        { concurrency: 512, perLane: 1 },
        { concurrency: 1024, perLane: 1 },
      ],
      warmUpStreams: 200,
    },
    keyFlood: { ratePerS: 10_000, durationMs: 8_000, rounds: 3, concurrency: 4, connections: 32, pipelining: 2 },
    headOfLine: { streams: 16, promptTokens: 100_000, uploadBytes: 100 * 1024 * 1024, semanticMisses: 320, baselineMs: 5_000, rounds: 2 },
    mcp: { levels: [1, 64], calls: 2_000, lists: 1_000, rounds: 4, warmUp: 20 },
  },
  // Each load-generator run is a process of its own (~0.4 s to start on a busy
  // 2-core machine): the quick run saves runs as much as streams.
  quick: {
    // One warm-up at 50 lanes opens the gateways' upstream pools that the level-100 run needs.
    ttft: { levels: [1, 100], streams: 100, warmUp: { concurrency: 50, perLane: 2 }, warmUpEachLevel: false },
    throughput: { tokens: 1_000 },
    // Streams still outlive a slow ramp and the plateau window, on each of the three paths (the floor, gRPC, SSE).
    capacity: { streams: 1_000, tokens: 12, plateauWindowMs: 2_000 },
    cancel: { total: 100, tokens: 100 },
    slow: { streams: 20, durationMs: 2000 },
    failover: { requests: 100 },
    hedge: { requests: 100 },
    telemetry: { tokens: 1_000, streams: 50, rounds: 1 },
    admission: { streamsPerLevel: 200, rounds: 1 },
    ledger: { calls: 200, rounds: 1 },
    resume: { warmUp: 10, ttftPerRound: 25, tokens: 1_000, pairs: 4, samples: 20 },
    pii: { iterations: 500, tokens: 3_000, rounds: 3 },
    needs: { promptBytes: 4_096, warmUp: 50, rounds: 2, streamsPerRound: 100, routeBatches: 100, countTokens: 100_000, countRuns: 5 },
    batch: { lines: 2_000, rounds: 2, streamsPerRound: 200, concurrency: 4 },
    // A quarter of the full upload: the same pieces of work, a quarter as many (the goals are per upload, not per byte).
    upload: { megabytes: 25 },
    agents: { levels: [1, 100], streams: 300, warmUp: 3 },
    ab: { rounds: 2, ttftPerRound: 100, tokens: 2_000, warmUp: { concurrency: 10, perLane: 20 } },
    // Seven paths × 1.3 s a stream: the three lowest rungs, once or twice each, keep the quick run's budget.
    publicProfile: {
      levels: [
        { concurrency: 1, perLane: 2 },
        { concurrency: 8, perLane: 1 },
        { concurrency: 32, perLane: 1 },
      ],
      warmUpStreams: 32,
    },
    keyFlood: { ratePerS: 10_000, durationMs: 2_500, rounds: 1, concurrency: 4, connections: 32, pipelining: 2 },
    // A tenth of the upload and a fifth of the prompt: the same parts at once, within the quick run's budget.
    headOfLine: { streams: 16, promptTokens: 20_000, uploadBytes: 10 * 1024 * 1024, semanticMisses: 64, baselineMs: 2_000, rounds: 1 },
    mcp: { levels: [1, 64], calls: 400, lists: 200, rounds: 2, warmUp: 5 },
  },
};

/**
 * Base name of a run's results files in bench/results: `latest` only for a
 * full run, so that a quick run never writes over the committed figures.
 * `only` names a single scenario's files.
 */
export function resultsName(mode: Mode, only?: string): string {
  const base = mode === "full" ? "latest" : "quick";
  return only === undefined ? base : `${base}-${only}`;
}

/** The TTFT chart's file name in bench/results. */
export function chartName(mode: Mode): string {
  return mode === "full" ? "ttft-overhead.svg" : "ttft-overhead-quick.svg";
}
