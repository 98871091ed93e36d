import { monitorEventLoopDelay } from "node:perf_hooks";
import { detectPii, type PiiSpan } from "../src/compliance/pii-detectors.js";
import type { RequestPolicy } from "../src/compliance/pii-policy.js";
import type { PiiTaskInput } from "../src/compliance/pii-task.js";
import { screenRequestPooled } from "../src/compliance/screen-request.js";
import { PII_KINDS } from "../src/config/pii-kinds.js";
import type { ChatRequest } from "../src/core/chat-request.js";
import { countedInputTokens } from "../src/usage/prompt-size.js";
import { tokenCounter } from "../src/usage/token-count.js";
import { installTaskPool } from "../src/workers/shared-pool.js";
import { createTaskPool, defaultPoolSize, defineTask, type TaskPool } from "../src/workers/task-pool.js";
import { heavyText } from "./heavy-text.js";
import { round, summary } from "./stats.js";

/**
 * The worker pool's two measurements (issue #47):
 *
 * (a) Crossover: for each text size, the relay thread's time to count
 * (and to PII-screen) a text inline, against its time to hand the same
 * text to a pool worker and take the answer back (event-loop utilisation
 * over sequential round trips: the structured clone out, the reply in),
 * and the round trip's wall time. The size where the hop's thread time
 * falls well under the inline time is where usage/pooled-count.ts and
 * compliance/screen-request.ts start to use the pool.
 *
 * (b) Head of line, in one process: a 1 ms ticker stands for the small
 * streams' timers while 100k-token prompts are counted (countedInputTokens)
 * and screened (screenRequestPooled, redact) a few at a time, with the
 * pool installed and without (what `workers.enabled: false` does), rounds
 * interleaved in the same run: event-loop delay p50/p99/max, and the
 * ticker's worst gap.
 *
 *   npm run build && node dist/bench/heavy-pool.js [--quick]
 */
const quick = process.argv.includes("--quick");
const SIZES = [512, 1024, 2048, 4096, 8192, 16_384, 32_768, 65_536, 131_072];
const RUNS = quick ? 10 : 30;

const countTask = defineTask<readonly string[], number[]>(import.meta.url, "../src/usage/count-task.js", "countTexts");
const piiTask = defineTask<PiiTaskInput, PiiSpan[]>(import.meta.url, "../src/compliance/pii-task.js", "detectPiiTask");
const KINDS = new Set<string>(PII_KINDS);

/** The relay thread's busy milliseconds for each call of `work` (event-loop utilisation across the call, so a pool hop counts only its own thread's part), median of `n` calls one after another, and the median wall time. */
async function threadTime(n: number, work: (i: number) => unknown): Promise<{ busyMs: number; wallP50: number }> {
  const walls: number[] = [];
  const busy: number[] = [];
  for (let i = 0; i < n; i++) {
    const before = performance.eventLoopUtilization();
    const t = performance.now();
    await work(i);
    walls.push(performance.now() - t);
    // The answer's continuation runs in this turn: a macrotask later, every part of the hop on this thread is in.
    await new Promise((resolve) => setImmediate(resolve));
    busy.push(performance.eventLoopUtilization(before).active);
  }
  return { busyMs: summary(busy).p50, wallP50: summary(walls).p50 };
}

async function crossover(pool: TaskPool) {
  const count = await tokenCounter();
  await pool.run(countTask, ["warm"]);
  await pool.run(piiTask, { text: "warm a@b.co", kinds: [...KINDS], custom: [] });
  const rows: string[] = [];
  for (const size of SIZES) {
    const texts = Array.from({ length: RUNS }, (_, i) => heavyText(size, size + i));
    const inlineCount = await threadTime(RUNS, (i) => count(texts[i]!));
    const pooledCount = await threadTime(RUNS, (i) => pool.run(countTask, [texts[i]!]));
    const inlinePii = await threadTime(RUNS, (i) => detectPii(texts[i]!, KINDS));
    const pooledPii = await threadTime(RUNS, (i) => pool.run(piiTask, { text: texts[i]!, kinds: [...KINDS], custom: [] }));
    rows.push(
      `${String(size).padStart(7)} chars | count inline ${round(inlineCount.busyMs, 3)} ms, pooled thread ${round(pooledCount.busyMs, 3)} ms (wall ${round(pooledCount.wallP50, 3)}) | pii inline ${round(inlinePii.busyMs, 3)} ms, pooled thread ${round(pooledPii.busyMs, 3)} ms (wall ${round(pooledPii.wallP50, 3)})`,
    );
  }
  console.log(`(a) crossover, relay thread ms per text, medians (busy time by event-loop utilisation; ${RUNS} texts per size)`);
  for (const row of rows) console.log(row);
}

const POLICY: RequestPolicy = { mode: "redact", kinds: KINDS, custom: [], localOnly: false, keptLocal: false };
const bigRequest = (seed: number): ChatRequest => ({
  model: "long",
  messages: [
    { role: "system", content: [{ type: "text", text: "You are a careful assistant." }] },
    { role: "user", content: [{ type: "text", text: heavyText(400_000, seed) }] },
  ],
  tools: [],
  sampling: { stop: [] },
  metadata: { labels: {} },
});

async function headOfLine(pool: TaskPool) {
  const PROMPTS = quick ? 4 : 12;
  const AT_ONCE = 4;
  const rounds = quick ? 2 : 4;
  const out = { on: [] as number[][], off: [] as number[][] };
  const gaps = { on: [] as number[], off: [] as number[] };
  for (let r = 0; r < rounds * 2; r++) {
    const mode = r % 2 === 0 ? "on" : "off";
    const uninstall = mode === "on" ? installTaskPool(pool) : () => {};
    const requests = Array.from({ length: PROMPTS }, (_, i) => bigRequest(1_000 * r + i));
    const histogram = monitorEventLoopDelay({ resolution: 1 });
    let last = performance.now();
    let worst = 0;
    const ticker = setInterval(() => {
      const now = performance.now();
      worst = Math.max(worst, now - last);
      last = now;
    }, 1);
    histogram.enable();
    let next = 0;
    const lane = async () => {
      while (next < requests.length) {
        const request = requests[next++]!;
        await screenRequestPooled(request, POLICY);
        await countedInputTokens(request);
      }
    };
    await Promise.all(Array.from({ length: AT_ONCE }, lane));
    histogram.disable();
    clearInterval(ticker);
    uninstall();
    out[mode].push([histogram.percentile(50) / 1e6, histogram.percentile(99) / 1e6, histogram.max / 1e6]);
    gaps[mode].push(worst);
  }
  console.log(`(b) head of line: ${PROMPTS} prompts of ~100k tokens (400,000 chars), ${AT_ONCE} at a time, screened (redact) and counted; event-loop delay, ms, ${rounds} rounds each, interleaved`);
  for (const mode of ["off", "on"] as const) {
    const p99 = summary(out[mode].map((x) => x[1]!));
    const max = Math.max(...out[mode].map((x) => x[2]!));
    console.log(`workers ${mode === "on" ? "on " : "off"}: delay p50 ${round(summary(out[mode].map((x) => x[0]!)).p50)} p99 (median of rounds) ${round(p99.p50)} max ${round(max)}; 1 ms ticker worst gap ${round(Math.max(...gaps[mode]))}`);
  }
  const ratio = summary(out.on.map((x) => x[1]!)).p50 / summary(out.off.map((x) => x[1]!)).p50;
  console.log(`event-loop delay p99, workers on / off: ${round(ratio, 3)}`);
}

async function main() {
  const pool = createTaskPool({ size: defaultPoolSize(), maxQueued: 256, timeoutMs: 60_000 });
  try {
    if (!process.argv.includes("--head-only")) await crossover(pool);
    await headOfLine(pool);
  } finally {
    await pool.close();
  }
}

await main();
