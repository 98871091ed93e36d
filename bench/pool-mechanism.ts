import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createTaskPool, defineTask } from "../src/workers/task-pool.js";
import { round, summary } from "./stats.js";

/**
 * Which worker mechanism (src/workers/task-pool.ts's TSDoc): the round
 * trip of a tiny task and of a 64 KiB text task through the gateway's own
 * worker_threads pool and through piscina 5.3.2, one worker each, the
 * same task module, rounds interleaved (ABAB) in one run.
 *
 *   npm run build && node dist/bench/pool-mechanism.js [path to piscina]
 *
 * piscina is not a dependency: install it anywhere (`npm install --prefix
 * /tmp/pisc piscina@5.3.2`) and pass its folder, or it is left out.
 */
const ROUNDS = 4;
const PER_ROUND = 500;

const dir = mkdtempSync(join(tmpdir(), "sluice-pool-"));
const file = join(dir, "tasks.mjs");
writeFileSync(file, "export function tiny(n) { return n + 1; }\nexport function text(s) { return s.length; }\nexport default tiny;\n");
const text64 = "x".repeat(64 * 1024 - 8) + "abcdefgh";

type Run = (name: "tiny" | "text", payload: unknown) => Promise<unknown>;

async function times(run: Run, name: "tiny" | "text", payload: unknown, into: number[]) {
  for (let i = 0; i < PER_ROUND; i++) {
    const t = performance.now();
    await run(name, payload);
    into.push(performance.now() - t);
  }
}

async function main() {
  const pool = createTaskPool({ size: 1, maxQueued: 16, timeoutMs: 10_000 });
  const tasks = { tiny: defineTask<number, number>(pathToFileURL(file).href, "./tasks.mjs", "tiny"), text: defineTask<string, number>(pathToFileURL(file).href, "./tasks.mjs", "text") };
  const ours: Run = (name, payload) => pool.run(tasks[name] as never, payload as never);
  const runs: Array<[string, Run]> = [["worker_threads (task-pool.ts)", ours]];
  let close = async () => {};
  const piscinaAt = process.argv[2];
  if (piscinaAt) {
    const specifier = pathToFileURL(join(piscinaAt, "node_modules/piscina/dist/esm-wrapper.mjs")).href;
    const { Piscina } = (await import(specifier)) as { Piscina: new (o: object) => { run(p: unknown, o: { name: string }): Promise<unknown>; destroy(): Promise<void> } };
    const piscina = new Piscina({ filename: pathToFileURL(file).href, minThreads: 1, maxThreads: 1 });
    runs.push(["piscina 5.3.2", (name, payload) => piscina.run(payload, { name })]);
    close = () => piscina.destroy();
  }
  const out = new Map(runs.map(([label]) => [label, { tiny: [] as number[], text: [] as number[] }]));
  for (const [, run] of runs) {
    await times(run, "tiny", 1, []); // warm-up: the worker started, the module loaded
    await times(run, "text", text64, []);
  }
  for (let r = 0; r < ROUNDS; r++) {
    for (const [label, run] of r % 2 === 0 ? runs : [...runs].reverse()) {
      await times(run, "tiny", 1, out.get(label)!.tiny);
      await times(run, "text", text64, out.get(label)!.text);
    }
  }
  for (const [label, t] of out) {
    const tiny = summary(t.tiny);
    const text = summary(t.text);
    console.log(`${label}: tiny p50 ${round(tiny.p50, 3)} ms p99 ${round(tiny.p99, 3)} ms; 64 KiB text p50 ${round(text.p50, 3)} ms p99 ${round(text.p99, 3)} ms (n=${tiny.n})`);
  }
  await pool.close();
  await close();
}

await main();
