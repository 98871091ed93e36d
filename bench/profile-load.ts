import { setTimeout as delay } from "node:timers/promises";
import { createProfileClient, type ProfilePath, type ProfileTarget } from "./profile-clients.js";
import { summary } from "./stats.js";

/** One run of the public streaming profile on one path at one concurrency. */
export interface ProfileRunSpec {
  readonly target: ProfileTarget;
  readonly concurrency: number;
  /** Streams each lane runs one after the other. */
  readonly perLane: number;
  /** Streams run first and not measured, at most 128 at once, on the fast prompt: the edge's code warmed, its pools open. */
  readonly warmUpStreams: number;
  /** Lanes start spread over this long (0: together): real traffic ramps, and a thousand connects in one instant only measures listen backlogs. */
  readonly rampMs: number;
}

/**
 * What one load-generator process runs, in order: one level's runs, one per
 * path, so that a level costs one process start, not one a path.
 */
export interface ProfileSpec {
  readonly runs: readonly ProfileRunSpec[];
  readonly prompt: string;
  readonly warmUpPrompt: string;
  /** Content deltas every stream must deliver, each `deltaBytes` long (the simulator's `token_bytes`). */
  readonly deltas: number;
  readonly deltaBytes: number;
  /** The upstream's cadence between deltas. */
  readonly intervalMs: number;
}

/** What one run measured; percentiles in ms. */
export interface ProfileRun {
  readonly path: ProfilePath;
  readonly concurrency: number;
  readonly streams: number;
  /** Streams that ended complete with every delta. */
  readonly complete: number;
  /** Streams that failed (an error, or an end without its last event). */
  readonly errors: number;
  /** Request sent → first content delta read. */
  readonly ttftMs: ReturnType<typeof summary>;
  /**
   * Each gap between consecutive reads of content at the client, minus the
   * upstream's cadence times the deltas it completed (one, unless a path
   * joined several into one message, as the gRPC edge may): deltas are
   * counted by bytes, so every wire is counted alike.
   */
  readonly gapMs: ReturnType<typeof summary>;
  /** The longest gap between consecutive reads of content, cadence included. */
  readonly maxGapMs: number;
  readonly firstError?: string;
}

async function run(spec: ProfileSpec, r: ProfileRunSpec): Promise<ProfileRun> {
  const client = createProfileClient(r.target);
  const lanes = (n: number, work: (lane: number) => Promise<void>) => Promise.all(Array.from({ length: n }, (_, lane) => work(lane)));
  const warmLanes = Math.min(r.concurrency, 128);
  await lanes(warmLanes, async (lane) => {
    for (let i = lane; i < r.warmUpStreams; i += warmLanes) await client.stream(spec.warmUpPrompt, () => undefined).catch(() => undefined);
  });
  const ttft: number[] = [];
  const gaps: number[] = [];
  let maxGapMs = 0;
  let complete = 0;
  let errors = 0;
  let firstError: string | undefined;
  await lanes(r.concurrency, async (lane) => {
    if (r.rampMs > 0) await delay((lane * r.rampMs) / r.concurrency); // the ramp's schedule, not synchronisation
    for (let i = 0; i < r.perLane; i++) {
      const started = performance.now();
      let last: number | undefined;
      let bytes = 0;
      let reached = 0;
      try {
        const ended = await client.stream(spec.prompt, (length) => {
          const now = performance.now();
          bytes += length;
          const before = reached;
          reached = Math.floor(bytes / spec.deltaBytes);
          if (last === undefined) ttft.push(now - started);
          else {
            gaps.push(now - last - (reached - before) * spec.intervalMs);
            maxGapMs = Math.max(maxGapMs, now - last);
          }
          last = now;
        });
        if (ended && bytes === spec.deltas * spec.deltaBytes) complete++;
        else {
          errors++;
          firstError ??= `ended ${ended} after ${bytes} of ${spec.deltas * spec.deltaBytes} bytes`;
        }
      } catch (e) {
        errors++;
        firstError ??= String((e as Error).message).slice(0, 160);
      }
    }
  });
  await client.close();
  return { path: r.target.path, concurrency: r.concurrency, streams: r.concurrency * r.perLane, complete, errors, ttftMs: summary(ttft), gapMs: summary(gaps), maxGapMs, ...(firstError ? { firstError } : {}) };
}

async function main(spec: ProfileSpec): Promise<ProfileRun[]> {
  const out: ProfileRun[] = [];
  for (const r of spec.runs) out.push(await run(spec, r));
  return out;
}

main(JSON.parse(process.argv[2]!) as ProfileSpec).then(
  (r) => {
    process.stdout.write(`${JSON.stringify(r)}\n`);
    process.exit(0);
  },
  (e: unknown) => {
    process.stderr.write(`profile load failed: ${String(e)}\n`);
    process.exit(1);
  },
);
