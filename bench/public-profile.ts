import { FLOOR_OF, PROFILE_PATHS, type ProfilePath } from "./profile-clients.js";
import type { ProfileRun } from "./profile-load.js";
import { type Goal, table } from "./report.js";
import { round } from "./stats.js";

/**
 * The public streaming profile, in the terms of the field's published
 * streaming benchmarks ("On the Bench"): the upstream sends a role chunk,
 * 64 content deltas of 16 bytes 20 ms apart, a finish chunk and `[DONE]`;
 * a path is judged by its added TTFT, its added inter-frame gap and the
 * highest concurrency it sustains. Method: bench/README.md, "Public
 * streaming profile". Pure: the figures from the runs, the rule, the goals.
 */
export const PROFILE = { deltas: 64, deltaBytes: 16, intervalMs: 20, maxGapMs: 40, maxErrorRate: 0.001 } as const;

/** The harness's ladder of concurrencies. */
export const PROFILE_LEVELS = [1, 8, 32, 128, 512, 1024] as const;

/** The harness's best published figures, printed beside ours. */
export const PUBLISHED_BEST = { addedTtftP50Ms: 0.21, addedGapP99Ms: 0.005, streams: 512 } as const;

export const PROFILE_NAMES: Readonly<Record<ProfilePath, string>> = {
  direct: "direct (client → simulator)",
  "floor-sse": "HTTP floor (byte-for-byte proxy)",
  "floor-grpc": "gRPC floor (connect-node relay)",
  "sluice-chat": "Sluice Chat Completions (SSE)",
  "sluice-messages": "Sluice Messages (SSE)",
  "sluice-responses": "Sluice Responses (SSE)",
  "sluice-grpc": "Sluice gRPC (connect-node client)",
};

/**
 * A level is sustained when errors are under 0.1 % of its streams, every
 * stream that did not fail delivered every delta, and no gap between two
 * deltas at the client exceeded 40 ms (twice the cadence).
 */
export function sustains(run: Pick<ProfileRun, "streams" | "complete" | "errors" | "maxGapMs">): boolean {
  return run.streams > 0 && run.errors / run.streams < PROFILE.maxErrorRate && run.complete === run.streams - run.errors && run.maxGapMs <= PROFILE.maxGapMs;
}

/**
 * The highest concurrency sustained, climbing the ladder from the lowest:
 * the first level that fails ends the climb (a path that holds 512 but not
 * 32 has no 512 to claim), 0 when even the first fails.
 */
export function sustainedConcurrency(runs: ReadonlyArray<Pick<ProfileRun, "concurrency" | "streams" | "complete" | "errors" | "maxGapMs">>): number {
  let best = 0;
  for (const run of [...runs].sort((a, b) => a.concurrency - b.concurrency)) {
    if (!sustains(run)) break;
    best = run.concurrency;
  }
  return best;
}

/** A path's figures over direct's at one concurrency: TTFT and gap percentiles minus direct's, ms. */
export interface Added {
  readonly ttftP50: number;
  readonly ttftP99: number;
  readonly gapP50: number;
  readonly gapP99: number;
}

export function added(path: ProfileRun, direct: ProfileRun): Added {
  return {
    ttftP50: path.ttftMs.p50 - direct.ttftMs.p50,
    ttftP99: path.ttftMs.p99 - direct.ttftMs.p99,
    gapP50: path.gapMs.p50 - direct.gapMs.p50,
    gapP99: path.gapMs.p99 - direct.gapMs.p99,
  };
}

export interface PublicProfileResult {
  readonly levels: readonly number[];
  /** The ladder the harness climbs; a quick run stops lower. */
  readonly ladder: readonly number[];
  readonly runs: Readonly<Partial<Record<ProfilePath, Readonly<Record<number, ProfileRun>>>>>;
  readonly sustained: Readonly<Partial<Record<ProfilePath, number>>>;
}

const EDGES: readonly ProfilePath[] = ["sluice-chat", "sluice-messages", "sluice-responses", "sluice-grpc"];
const ms = (n: number, digits = 2) => `${n >= 0 ? "+" : ""}${round(n, digits)} ms`;

function addedAt(r: PublicProfileResult, path: ProfilePath, c: number): Added | undefined {
  const run = r.runs[path]?.[c];
  const direct = r.runs.direct?.[c];
  return run && direct ? added(run, direct) : undefined;
}

export function publicProfileSection(r: PublicProfileResult): string {
  const rows = r.levels.flatMap((c) =>
    PROFILE_PATHS.flatMap((p) => {
      const run = r.runs[p]?.[c];
      if (!run) return [];
      const a = p === "direct" ? undefined : addedAt(r, p, c);
      const fmt = (n: number | undefined) => (n === undefined ? "—" : round(n, 3));
      return [
        [
          String(c),
          PROFILE_NAMES[p],
          run.ttftMs.p50,
          run.ttftMs.p99,
          fmt(a?.ttftP50),
          fmt(a?.ttftP99),
          round(run.gapMs.p50, 3),
          round(run.gapMs.p99, 3),
          fmt(a?.gapP50),
          fmt(a?.gapP99),
          round(run.maxGapMs, 1),
          `${run.complete}/${run.streams}`,
          sustains(run) ? "yes" : "no",
        ],
      ];
    }),
  );
  return [
    `## Public streaming profile (the "On the Bench" harness's terms: ${PROFILE.deltas} deltas of ${PROFILE.deltaBytes} bytes, ${PROFILE.intervalMs} ms apart; method in bench/README.md)`,
    table(["streams", "path", "TTFT p50 ms", "TTFT p99 ms", "added TTFT p50", "added TTFT p99", "gap − 20 ms p50", "gap − 20 ms p99", "added gap p50", "added gap p99", "max gap ms", "complete", "sustained"], rows),
    "",
    `Highest concurrency sustained (of ${r.ladder.join(", ")}; every delta delivered, no gap over ${PROFILE.maxGapMs} ms, errors under ${PROFILE.maxErrorRate * 100} %)${r.levels.length < r.ladder.length ? `, climbed to ${r.levels.at(-1)} only in this mode` : ""}: ${PROFILE_PATHS.map((p) => `${PROFILE_NAMES[p]} ${r.sustained[p] ?? "—"}`).join("; ")}.`,
    `The harness's best published: added TTFT ${PUBLISHED_BEST.addedTtftP50Ms} ms p50, added gap ≤ ${PUBLISHED_BEST.addedGapP99Ms * 1000} µs p99, ${PUBLISHED_BEST.streams} streams sustained.`,
  ].join("\n");
}

/** The profile's goals (issue #47): SSE edges against the HTTP floor, the gRPC edge against the gRPC floor, all over direct in the same run. */
export function publicProfileGoals(r: PublicProfileResult): Goal[] {
  const ttft = (p: ProfilePath) => addedAt(r, p, 1)?.ttftP50 ?? Number.NaN;
  const gap = (p: ProfilePath, c: number) => addedAt(r, p, c)?.gapP99 ?? Number.NaN;
  const floorOf = (p: ProfilePath) => FLOOR_OF[p]!;
  const each = (figure: (p: ProfilePath) => string) => EDGES.map((p) => `${PROFILE_NAMES[p].replace("Sluice ", "")} ${figure(p)}`).join(", ");
  const ran128 = r.levels.includes(128);
  const grpcOver = ttft("sluice-grpc") - ttft("floor-grpc");
  return [
    {
      id: "public-ttft",
      name: "Public profile: added TTFT p50 at 1 stream, every edge (SSE edges vs the HTTP floor, gRPC vs the gRPC floor)",
      target: "≤ the matching floor's + 0.3 ms",
      measured: `${each((p) => ms(ttft(p), 3))}; floors: HTTP ${ms(ttft("floor-sse"), 3)}, gRPC ${ms(ttft("floor-grpc"), 3)}`,
      met: EDGES.every((p) => ttft(p) <= ttft(floorOf(p)) + 0.3),
    },
    {
      id: "public-gap-1",
      name: "Public profile: added inter-frame gap p99 at 1 stream, every edge",
      target: "≤ 1 ms",
      measured: `${each((p) => ms(gap(p, 1), 3))}; floors: HTTP ${ms(gap("floor-sse", 1), 3)}, gRPC ${ms(gap("floor-grpc", 1), 3)}`,
      met: EDGES.every((p) => gap(p, 1) <= 1),
    },
    {
      id: "public-gap-128",
      name: "Public profile: added inter-frame gap p99 at 128 streams, every edge",
      target: "≤ the matching floor's + 2 ms",
      measured: ran128 ? `${each((p) => ms(gap(p, 128), 3))}; floors: HTTP ${ms(gap("floor-sse", 128), 3)}, gRPC ${ms(gap("floor-grpc", 128), 3)}` : "not run (quick: up to 32 streams)",
      met: ran128 && EDGES.every((p) => gap(p, 128) <= gap(floorOf(p), 128) + 2),
    },
    {
      id: "public-sustained",
      name: `Public profile: highest concurrency sustained (of ${r.levels.join(", ")}), every edge`,
      target: "≥ the matching floor's",
      measured: `${each((p) => String(r.sustained[p] ?? 0))}; floors: HTTP ${r.sustained["floor-sse"] ?? 0}, gRPC ${r.sustained["floor-grpc"] ?? 0}; direct ${r.sustained.direct ?? 0}`,
      met: EDGES.every((p) => (r.sustained[p] ?? 0) >= (r.sustained[floorOf(p)] ?? 0)),
    },
    {
      id: "public-grpc-ttft",
      name: "gRPC edge against the gRPC floor: TTFT p50 at 1 stream, public profile",
      target: "≤ the floor's + 0.3 ms",
      measured: `${ms(grpcOver, 3)} (edge ${ms(ttft("sluice-grpc"), 3)}, floor ${ms(ttft("floor-grpc"), 3)} over direct)`,
      met: grpcOver <= 0.3,
    },
  ];
}
