import { join } from "node:path";
import { runJson } from "../procs.js";
import { PROFILE_PATHS, type ProfilePath, type ProfileTarget } from "../profile-clients.js";
import type { ProfileRun, ProfileSpec } from "../profile-load.js";
import { PROFILE, PROFILE_LEVELS, PROFILE_NAMES, type PublicProfileResult, sustainedConcurrency, sustains } from "../public-profile.js";
import { log, ROOT, type Services, simIdle, simReset, startGrpcFloor } from "../services.js";
import { round } from "../stats.js";

const PROMPT = `#sim tokens=${PROFILE.deltas} token_bytes=${PROFILE.deltaBytes} interval_ms=${PROFILE.intervalMs}`;
/** The warm-up's streams: the same shape without the cadence, so they cost milliseconds. */
const WARM_UP_PROMPT = `#sim tokens=${PROFILE.deltas} token_bytes=${PROFILE.deltaBytes}`;
/** Above this many lanes, their starts spread over a second (1,000 connects a second, the capacity scenario's ramp). */
const RAMP_ABOVE = 32;
/** Every level up to here runs on every path, sustained or not: the gap goal reads 128. */
const ALWAYS_UP_TO = 128;

/**
 * The public streaming profile: the simulator direct, the HTTP floor, the
 * gRPC floor (started here, beside the shared services) and each Sluice
 * edge, level by level (one load-generator process a level, the paths in
 * turn), so that machine noise of a moment hits every path of a level; a path stops climbing above 128 streams
 * once it failed a level (bench/public-profile.ts has the rule).
 */
export async function publicProfileScenario(s: Services): Promise<PublicProfileResult> {
  const grpcFloor = await startGrpcFloor(s.simOpenAi);
  const runs: Partial<Record<ProfilePath, Record<number, ProfileRun>>> = {};
  const failed = new Set<ProfilePath>();
  try {
    for (const { concurrency, perLane } of s.size.publicProfile.levels) {
      const paths = PROFILE_PATHS.filter((p) => concurrency <= ALWAYS_UP_TO || !failed.has(p));
      const spec: ProfileSpec = {
        runs: paths.map((path) => ({
          target: targetOf(s, path, grpcFloor.url, concurrency),
          concurrency,
          perLane,
          warmUpStreams: s.size.publicProfile.warmUpStreams,
          rampMs: concurrency > RAMP_ABOVE ? 1_000 : 0,
        })),
        prompt: PROMPT,
        warmUpPrompt: WARM_UP_PROMPT,
        deltas: PROFILE.deltas,
        deltaBytes: PROFILE.deltaBytes,
        intervalMs: PROFILE.intervalMs,
      };
      for (const run of await runJson<ProfileRun[]>([join(ROOT, "dist/bench/profile-load.js"), JSON.stringify(spec)], 900_000)) {
        (runs[run.path] ??= {})[concurrency] = run;
        if (!sustains(run)) failed.add(run.path);
        log(
          `public-profile c=${concurrency} ${PROFILE_NAMES[run.path]}: TTFT p50 ${round(run.ttftMs.p50, 3)} p99 ${round(run.ttftMs.p99, 3)} ms, gap−20 p50 ${round(run.gapMs.p50, 3)} p99 ${round(run.gapMs.p99, 3)} max gap ${round(run.maxGapMs, 1)} ms, ${run.complete}/${run.streams} complete${run.firstError ? ` (${run.firstError})` : ""}`,
        );
      }
      await simIdle(s);
      await simReset(s);
    }
  } finally {
    await grpcFloor.proc.stop();
  }
  const sustained = Object.fromEntries(PROFILE_PATHS.map((p) => [p, sustainedConcurrency(Object.values(runs[p] ?? {}))]));
  return { levels: s.size.publicProfile.levels.map((l) => l.concurrency), ladder: PROFILE_LEVELS, runs, sustained };
}

function targetOf(s: Services, path: ProfilePath, grpcFloorUrl: string, concurrency: number): ProfileTarget {
  const connections = Math.ceil(concurrency / 500);
  switch (path) {
    case "direct":
      return { path, url: s.simOpenAi, model: "sim-1" };
    case "floor-sse":
      return { path, url: s.floorUrl, model: "sim-1" };
    case "floor-grpc":
      return { path, url: grpcFloorUrl, model: "sim-1", connections };
    case "sluice-grpc":
      return { path, url: s.gatewayUrl, model: "bench", connections };
    default:
      return { path, url: `${s.gatewayUrl}/v1`, model: "bench" };
  }
}
