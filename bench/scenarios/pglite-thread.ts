import { log, type Services, startGateway } from "../services.js";
import { round, summary } from "../stats.js";
import { CACHE_UPSTREAM_TTFT_MS, DB_READY_TIMEOUT_MS, semanticMissScenario } from "./cache.js";

/**
 * Where the embedded PGlite runs, before and after issue #47, in one run:
 * `worker` (the default: its own thread) against `gateway`
 * (SLUICE_PGLITE_THREAD=gateway, the gateway's thread, as before). Two
 * figures each: what a semantic miss adds over the cache off (the
 * issue's goal: the embedding call + 1 ms), and how long the gateway's
 * loop stalls while the database opens, seen from outside as the slowest
 * `/readyz` answer, from listening until ready and for a second after.
 */

const SIDES = { worker: {}, gateway: { SLUICE_PGLITE_THREAD: "gateway" } } as const satisfies Record<string, NodeJS.ProcessEnv>;
type Side = keyof typeof SIDES;

/** Probing goes on this long after ready: the goal says the loop never stalls over 50 ms for the database after it. */
const AFTER_READY_MS = 1_000;
const START_ROUNDS = 2;

const SEMANTIC_MODELS = (model: string) => ({
  off: { provider: "sim", model },
  emb: { provider: "sim", model: "sim-embed" },
  semantic: { provider: "sim", model, cache: { semantic: { embeddingModel: "emb", threshold: 0.99 } } },
});

/** One start of a gateway whose semantic cache needs the embedded database: `/readyz` probed back to back from listening on. */
async function startStall(s: Services, side: Side) {
  const model = `sim-1?tokens=8&ttft_ms=${CACHE_UPSTREAM_TTFT_MS}`;
  const gw = await startGateway(s, {}, { models: SEMANTIC_MODELS(model), env: SIDES[side], timeoutMs: DB_READY_TIMEOUT_MS });
  const listening = performance.now();
  const before: number[] = [];
  const after: number[] = [];
  let readyAt: number | undefined;
  try {
    while (performance.now() - listening < DB_READY_TIMEOUT_MS) {
      const sent = performance.now();
      const response = await fetch(`${gw.url}/readyz`);
      await response.arrayBuffer();
      (readyAt === undefined ? before : after).push(performance.now() - sent);
      if (readyAt === undefined && response.status === 200) readyAt = performance.now();
      if (readyAt !== undefined && performance.now() - readyAt >= AFTER_READY_MS) break;
    }
  } finally {
    await gw.proc.stop();
  }
  if (readyAt === undefined) throw new Error(`the gateway (PGlite on the ${side} thread) was not ready within ${DB_READY_TIMEOUT_MS} ms`);
  const result = { readyMs: readyAt - listening, stallBeforeReadyMs: summary(before).max, stallAfterReadyMs: summary(after).max, probes: before.length + after.length };
  log(`pglite ${side} thread: ready ${round(result.readyMs)} ms after listening; slowest /readyz ${round(result.stallBeforeReadyMs)} ms before ready, ${round(result.stallAfterReadyMs)} ms in the second after (${result.probes} probes)`);
  return result;
}

export async function pgliteThreadRun(s: Services) {
  const start: Record<Side, Array<Awaited<ReturnType<typeof startStall>>>> = { worker: [], gateway: [] };
  for (let r = 0; r < START_ROUNDS; r++) for (const side of Object.keys(SIDES) as Side[]) start[side].push(await startStall(s, side));
  const model = `sim-1?tokens=8&ttft_ms=${CACHE_UPSTREAM_TTFT_MS}`;
  const streams = s.size.ttft.streams / 4;
  const miss = {} as Record<Side, Awaited<ReturnType<typeof semanticMissScenario>>>;
  for (const side of Object.keys(SIDES) as Side[]) miss[side] = await semanticMissScenario(s, model, streams, "pglite", {}, SIDES[side]);
  const semanticMiss = Object.fromEntries(
    (Object.keys(SIDES) as Side[]).map((side) => [side, { addedMs: miss[side].addedMs, embedCallMs: miss[side].embedCallMs, missP99Ms: miss[side].results.semanticMiss.p99, offP99Ms: miss[side].results.off.p99 }]),
  ) as Record<Side, { addedMs: number; embedCallMs: number; missP99Ms: number; offP99Ms: number }>;
  for (const side of Object.keys(SIDES) as Side[]) log(`pglite ${side} thread: semantic miss adds ${round(semanticMiss[side].addedMs)} ms p50 over the cache off (embedding call ${round(semanticMiss[side].embedCallMs)} ms)`);
  const worst = (side: Side, key: "stallBeforeReadyMs" | "stallAfterReadyMs") => Math.max(...start[side].map((x) => x[key]));
  return {
    start,
    semanticMiss,
    summary: {
      stallBeforeReadyMs: { worker: worst("worker", "stallBeforeReadyMs"), gateway: worst("gateway", "stallBeforeReadyMs") },
      stallAfterReadyMs: { worker: worst("worker", "stallAfterReadyMs"), gateway: worst("gateway", "stallAfterReadyMs") },
      missAddedMs: { worker: semanticMiss.worker.addedMs, gateway: semanticMiss.gateway.addedMs },
    },
  };
}
