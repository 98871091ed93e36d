import { setTimeout as delay } from "node:timers/promises";
import { createRandom } from "../src/simulator/random.js";
import { simulatedTokens } from "../src/simulator/text.js";
import { epochMs, summary } from "./stats.js";
import { createTarget, type Target, type TargetSpec } from "./targets.js";

/** One load-generator run, as the orchestrator describes it on the command line. */
export type LoadSpec =
  | {
      scenario: "ttft";
      target: TargetSpec;
      concurrency: number;
      perLane: number;
      prompt: string;
      unique?: boolean;
      /** A second target, interleaved request by request (A B B A …) in each lane: its TTFTs come back apart, as `alternateSamples`. */
      alternate?: TargetSpec;
      /**
       * Rounds of `concurrency` requests sent and not timed before the timed
       * ones, on the same connections: a load generator's first burst runs
       * its own code cold (request encoding, response parsing), which timed
       * the client's JIT warm-up, not the path.
       */
      warmUpRounds?: number;
      /**
       * Lanes keep starting streams (up to `perLane` each) until this process
       * gets SIGUSR2: a run as long as work the orchestrator does beside it,
       * whose length is not known in advance. Each sample's start (epoch ms)
       * comes back in `startedAt`, so the orchestrator can sort samples by
       * what ran at the time.
       */
      untilSignal?: boolean;
    }
  | { scenario: "throughput"; target: TargetSpec; concurrency: number; prompt: string }
  | { scenario: "cancel"; target: TargetSpec; total: number; concurrency: number; prompt: string; seed: number }
  | { scenario: "capacity"; target: TargetSpec; streams: number; prompt: string; rampPerSecond: number; tokens: number; intervalMs: number }
  | { scenario: "slow"; target: TargetSpec; streams: number; readIntervalMs: number; durationMs: number; prompt: string }
  | { scenario: "resilience"; target: TargetSpec; requests: number; concurrency: number; prompt: string };

const withTag = (prompt: string, tag: string) => `${prompt} tag=${tag}`;

async function lanes(concurrency: number, work: (lane: number) => Promise<void>): Promise<void> {
  await Promise.all(Array.from({ length: concurrency }, (_, lane) => work(lane)));
}

/**
 * Time to the first text delta of each stream, `concurrency` lanes started
 * together. With an `alternate`, each lane's requests go A B B A A B …
 * (so neither side is always the one after the other), and each side's
 * TTFTs are kept apart: the two are compared in the same process at the
 * same moments, without a load generator of their own each.
 */
async function ttft(target: Target, spec: Extract<LoadSpec, { scenario: "ttft" }>, alternate?: Target) {
  const samples: number[] = [];
  const startedAt: number[] = [];
  const alternateSamples: number[] = [];
  /** The target's own `sluice-overhead-ms` of each timed stream, when it sends one. */
  const overheadMs: number[] = [];
  let errors = 0;
  let stopped = false;
  if (spec.untilSignal) process.once("SIGUSR2", () => void (stopped = true));
  let alternateErrors = 0;
  // `unique`: every request asks something no other one does (a cache miss every time).
  const run = `${process.pid}-${Date.now()}`;
  for (let round = 0; round < (spec.warmUpRounds ?? 0); round++) {
    await lanes(spec.concurrency, async (lane) => {
      const prompt = spec.unique ? `${spec.prompt}\nwarm-up ${run}-${round}-${lane}` : spec.prompt;
      await target.stream(prompt, new AbortController().signal, () => undefined).catch(() => undefined);
    });
  }
  // The orchestrator's baseline starts here, not at this process's start (seconds on a busy machine).
  if (spec.untilSignal) process.stdout.write(`${JSON.stringify({ warm: true })}\n`);
  await lanes(spec.concurrency, async (lane) => {
    for (let i = 0; i < spec.perLane && !stopped; i++) {
      const started = performance.now();
      const startedEpoch = epochMs();
      let first: number | undefined;
      const prompt = spec.unique ? `${spec.prompt}\nquestion ${run}-${lane}-${i}` : spec.prompt;
      const other = alternate !== undefined && (i % 4 === 1 || i % 4 === 2);
      try {
        const result = await (other ? alternate : target).stream(prompt, new AbortController().signal, () => {
          first ??= performance.now() - started;
        });
        if (first !== undefined && other) alternateSamples.push(first);
        else if (first !== undefined) {
          samples.push(first);
          startedAt.push(startedEpoch);
        }
        if (!other && result.overheadMs !== undefined) overheadMs.push(result.overheadMs);
      } catch {
        if (other) alternateErrors++;
        else errors++;
      }
    }
  });
  if (alternate) return { samples, errors, alternateSamples, alternateErrors, overheadMs };
  return spec.untilSignal ? { samples, errors, startedAt, overheadMs } : { samples, errors, overheadMs };
}

async function throughput(target: Target, spec: Extract<LoadSpec, { scenario: "throughput" }>) {
  let deltas = 0;
  let chars = 0;
  let errors = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await lanes(spec.concurrency, async () => {
    try {
      const r = await target.stream(spec.prompt, new AbortController().signal, () => undefined);
      deltas += r.textDeltas;
      chars += r.textChars;
    } catch {
      errors++;
    }
  });
  const used = process.cpuUsage(cpu);
  return { deltas, chars, errors, wallMs: performance.now() - started, clientCpuS: (used.user + used.system) / 1e6 };
}

/** Cumulative character ends of the simulator's seed-1 tokens: which token a stream's text has reached. */
function tokenEnds(count: number): number[] {
  const ends: number[] = [];
  for (const token of simulatedTokens(1, count)) ends.push((ends.at(-1) ?? 0) + token.length);
  return ends;
}

/**
 * Streams aborted after a random 1-10 upstream deltas; the abort time, and
 * when the cancel left this process, go with the tag the simulator records.
 * Deltas are counted by text (the simulator's seed-1 tokens), not by
 * messages: the gRPC edge may carry several in one message.
 */
async function cancel(target: Target, spec: Extract<LoadSpec, { scenario: "cancel" }>) {
  const next = createRandom(spec.seed);
  const ends = tokenEnds(1000);
  const aborts: Array<{ tag: string; abortAt: number; sentAt: number; received: number }> = [];
  const sent: Array<Promise<void>> = [];
  let started = 0;
  await lanes(spec.concurrency, async (lane) => {
    while (started < spec.total) {
      const tag = `c${spec.seed}-${lane}-${started++}`;
      const after = 1 + Math.floor(next() * 10);
      const controller = new AbortController();
      let received = 0;
      let chars = 0;
      try {
        await target.stream(withTag(spec.prompt, tag), controller.signal, (bytes) => {
          if (received >= after) return;
          chars += bytes;
          while (received < ends.length && ends[received]! <= chars) received++;
          if (received >= after) {
            const abort = { tag, abortAt: epochMs(), sentAt: Number.NaN, received };
            aborts.push(abort);
            controller.abort();
            sent.push(target.cancelSent().then((at) => void (abort.sentAt = at)));
          }
        });
      } catch {
        // our abort
      }
    }
  });
  await Promise.all(sent);
  return { aborts };
}

/**
 * Many slow streams, opened at `rampPerSecond` (real traffic ramps; opening
 * thousands of connections in one instant only measures SYN queues), all
 * held open together; the orchestrator measures the gateway meanwhile.
 * `interTokenAddedMs`: for every text message after a stream's first, the
 * gap since the stream's previous message minus `intervalMs` times the
 * upstream tokens it completes (one, unless a late path merged several):
 * the delay the path added to the upstream's pace, measured alike on every path.
 */
async function capacity(target: Target, spec: Extract<LoadSpec, { scenario: "capacity" }>) {
  let completed = 0;
  let failed = 0;
  const errors = new Map<string, number>();
  const ends = tokenEnds(spec.tokens);
  const added: number[] = [];
  const started = performance.now();
  const batch = Math.max(1, Math.round(spec.rampPerSecond / 20));
  await Promise.all(
    Array.from({ length: spec.streams }, async (_, i) => {
      if (i >= batch) await delay(Math.floor(i / batch) * 50); // ramp schedule, not synchronisation
      let chars = 0;
      let reached = 0;
      let last: number | undefined;
      const onText = (bytes: number) => {
        const now = performance.now();
        chars += bytes;
        const before = reached;
        while (reached < ends.length && ends[reached]! <= chars) reached++;
        if (reached === before) return;
        if (last !== undefined) added.push(now - last - (reached - before) * spec.intervalMs);
        last = now;
      };
      try {
        const r = await target.stream(spec.prompt, new AbortController().signal, onText);
        if (r.finished) completed++;
        else failed++;
      } catch (e) {
        failed++;
        const key = String((e as Error).message).slice(0, 80);
        errors.set(key, (errors.get(key) ?? 0) + 1);
      }
    }),
  );
  return { completed, failed, wallMs: performance.now() - started, errors: Object.fromEntries(errors), interTokenAddedMs: summary(added) };
}

/** Clients that read one text delta per interval from a fast upstream, then leave. */
async function slow(target: Target, spec: Extract<LoadSpec, { scenario: "slow" }>) {
  const delivered: Record<string, number> = {};
  await lanes(spec.streams, async (lane) => {
    const tag = `slow-${lane}`;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), spec.durationMs);
    delivered[tag] = 0;
    try {
      await target.stream(withTag(spec.prompt, tag), controller.signal, async (bytes) => {
        delivered[tag]! += bytes;
        await delay(spec.readIntervalMs); // the behaviour under test: a slow reader
      });
    } catch {
      // our abort
    } finally {
      clearTimeout(timer);
    }
  });
  return { delivered };
}

/** Each request's time to first token, who served it, and whether it failed, for the retry and hedging scenarios. */
async function resilience(target: Target, spec: Extract<LoadSpec, { scenario: "resilience" }>) {
  const results: Array<{ ttftMs?: number; provider?: string; error?: string }> = [];
  let started = 0;
  await lanes(spec.concurrency, async () => {
    while (started < spec.requests) {
      started++;
      const t0 = performance.now();
      let first: number | undefined;
      try {
        const r = await target.stream(spec.prompt, new AbortController().signal, () => {
          first ??= performance.now() - t0;
        });
        results.push({ ...(first === undefined ? {} : { ttftMs: first }), ...(r.provider ? { provider: r.provider } : {}) });
      } catch (e) {
        results.push({ error: String((e as Error).message).slice(0, 120) });
      }
    }
  });
  return { results };
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2]!) as LoadSpec;
  const target = createTarget(spec.target);
  const alternate = spec.scenario === "ttft" && spec.alternate ? createTarget(spec.alternate) : undefined;
  let result: unknown;
  switch (spec.scenario) {
    case "ttft":
      result = await ttft(target, spec, alternate);
      break;
    case "throughput":
      result = await throughput(target, spec);
      break;
    case "cancel":
      result = await cancel(target, spec);
      break;
    case "capacity":
      result = await capacity(target, spec);
      break;
    case "slow":
      result = await slow(target, spec);
      break;
    case "resilience":
      result = await resilience(target, spec);
      break;
  }
  await target.close();
  await alternate?.close();
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}

void main();
