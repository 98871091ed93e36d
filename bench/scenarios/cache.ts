import { servePgliteOverWire } from "../semantic.js";
import { load, log, type Services, simReset, startGateway } from "../services.js";
import { round, summary } from "../stats.js";
import type { TargetSpec } from "../targets.js";

// Response cache (issue #26) --------------------------------------------------
/** The provider's time to first token in the cache scenario: a hit must beat a provider that thinks, not a zero-delay one. */
export const CACHE_UPSTREAM_TTFT_MS = 20;

/** A path of a rounds-interleaved TTFT measurement: where it goes, and whether every question is new. */
export type RoundPath = { readonly target: TargetSpec; readonly unique: boolean };

/**
 * Each path's TTFT samples and errors, the paths interleaved in `rounds`
 * and pooled: machine noise hits every path alike. Every run's load
 * generator first sends five untimed bursts on the same connections: the
 * client's cold code and the gateway's first bursts of this size are not
 * the path's cost.
 */
export async function pooledRounds<K extends string>(paths: Record<K, RoundPath>, rounds: number, run: { concurrency: number; perLane: number; prompt: string }) {
  const samples = {} as Record<K, number[]>;
  const errors = {} as Record<K, number>;
  for (let round = 0; round < rounds; round++) {
    for (const [name, path] of Object.entries(paths) as Array<[K, RoundPath]>) {
      const r = await load<{ samples: number[]; errors: number }>({ scenario: "ttft", target: path.target, ...run, unique: path.unique, warmUpRounds: 5 });
      (samples[name] ??= []).push(...r.samples);
      errors[name] = (errors[name] ?? 0) + r.errors;
    }
  }
  return { samples, errors };
}

export async function cacheScenario(s: Services) {
  const model = `sim-1?tokens=8&ttft_ms=${CACHE_UPSTREAM_TTFT_MS}`;
  const gw = await startGateway(
    s,
    {},
    {
      models: { off: { provider: "sim", model }, exact: { provider: "sim", model, cache: { exact: { ttlS: 3_600 } } } },
    },
  );
  const levels = s.size.ttft.levels.filter((c) => c <= 100);
  const streams = s.size.ttft.streams / 4;
  const paths = {
    direct: { target: { kind: "direct" as const, url: s.simOpenAi, model }, unique: true },
    off: { target: { kind: "sluice-grpc" as const, url: gw.url, model: "off" }, unique: true },
    miss: { target: { kind: "sluice-grpc" as const, url: gw.url, model: "exact" }, unique: true },
    hit: { target: { kind: "sluice-grpc" as const, url: gw.url, model: "exact" }, unique: false },
  };
  const results: Record<string, Record<number, { p50: number; p99: number; errors: number }>> = {};
  const prompt = "What does the cache keep?";
  try {
    // Warm both gateways' paths, and store the hit path's one entry.
    for (const path of Object.values(paths)) await load({ scenario: "ttft", target: path.target, concurrency: 1, perLane: 20, prompt, unique: path.unique });
    // Off and miss differ by less than this machine's noise: hence rounds, pooled.
    const rounds = 3;
    for (const concurrency of levels) {
      const { samples, errors } = await pooledRounds(paths, rounds, { concurrency, perLane: Math.max(1, Math.ceil(streams / concurrency / rounds)), prompt });
      for (const name of Object.keys(paths) as Array<keyof typeof paths>) {
        (results[name] ??= {})[concurrency] = { ...summary(samples[name]!), errors: errors[name]! };
        log(`cache c=${concurrency} ${name}: TTFT p50 ${round(results[name]![concurrency]!.p50)} ms p99 ${round(results[name]![concurrency]!.p99)} ms (${samples[name]!.length} streams, ${errors[name]} errors)`);
      }
      await simReset(s);
    }
  } finally {
    await gw.proc.stop();
  }
  const at = (name: string, c: number) => results[name]![c]!.p50;
  for (const c of levels) log(`cache c=${c}: exact hit ÷ direct TTFT p50 ×${round(at("hit", c) / at("direct", c))}${c === 100 ? ` (goal ≤ 0.5×: ${at("hit", c) / at("direct", c) <= 0.5 ? "met" : "not met"})` : ""}`);
  return {
    upstreamTtftMs: CACHE_UPSTREAM_TTFT_MS,
    levels,
    results,
    hitRatio: Object.fromEntries(levels.map((c) => [c, at("hit", c) / at("direct", c)])),
    missAddedMs: at("miss", levels[0]!) - at("off", levels[0]!),
    semanticMiss: await semanticMisses(s, model, streams),
  };
}

/** Starting the embedded PGlite takes seconds on this machine (TOOLCHAIN: 5–16 s); the gateway is timed once it is ready. */
export const DB_READY_TIMEOUT_MS = 90_000;

/**
 * What a semantic-cache miss adds, one stream at a time: TTFT through an
 * alias with a semantic cache (threshold 0.99, every question new, so each
 * one is embedded, looked up in the embedded PGlite and stored after it
 * completed) against an alias without a cache on the same gateway, and the
 * embedding call itself (the simulator's `/embeddings`, straight), timed in
 * the same rounds. The issue's bound is the embedding call + 1 ms.
 */
export async function semanticMissScenario(s: Services, model: string, streams: number, mode: "pglite" | "url", store: Record<string, unknown>, env?: NodeJS.ProcessEnv) {
  const gw = await startGateway(
    s,
    { cache: { lookupTimeoutMs: 1_000 }, store },
    {
      models: {
        off: { provider: "sim", model },
        emb: { provider: "sim", model: "sim-embed" },
        semantic: { provider: "sim", model, cache: { semantic: { embeddingModel: "emb", threshold: 0.99 } } },
      },
      readyEvent: "db.ready",
      timeoutMs: DB_READY_TIMEOUT_MS,
      ...(env ? { env } : {}),
    },
  );
  const paths = {
    embed: { target: { kind: "direct-embed" as const, url: s.simOpenAi, model: "sim-embed" }, unique: true },
    off: { target: { kind: "sluice-grpc" as const, url: gw.url, model: "off" }, unique: true },
    semanticMiss: { target: { kind: "sluice-grpc" as const, url: gw.url, model: "semantic" }, unique: true },
  };
  const prompt = "Which regions does the service run in?";
  const rounds = 3;
  let pooled: Awaited<ReturnType<typeof pooledRounds<keyof typeof paths>>>;
  try {
    for (const path of Object.values(paths)) await load({ scenario: "ttft", target: path.target, concurrency: 1, perLane: 20, prompt, unique: true });
    pooled = await pooledRounds(paths, rounds, { concurrency: 1, perLane: Math.ceil(streams / rounds), prompt });
  } finally {
    await gw.proc.stop();
  }
  const { samples, errors } = pooled;
  const results = Object.fromEntries(Object.keys(paths).map((name) => [name, { ...summary(samples[name as keyof typeof paths]), errors: errors[name as keyof typeof paths] }])) as Record<
    keyof typeof paths,
    ReturnType<typeof summary> & { errors: number }
  >;
  for (const [name, r] of Object.entries(results))
    log(`cache semantic (${mode}${env?.SLUICE_PGLITE_THREAD ? `, PGlite on the ${env.SLUICE_PGLITE_THREAD} thread` : ""}) c=1 ${name}: p50 ${round(r.p50)} ms p99 ${round(r.p99)} ms (${r.n} calls, ${r.errors} errors)`);
  return { results, embedCallMs: results.embed.p50, addedMs: results.semanticMiss.p50 - results.off.p50 };
}

/** The semantic miss on both stores: PGlite in the gateway's process (in its worker thread) and a server by URL. */
export async function semanticMisses(s: Services, model: string, streams: number) {
  const pglite = await semanticMissScenario(s, model, streams, "pglite", {});
  const server = await servePgliteOverWire();
  try {
    return { pglite, url: await semanticMissScenario(s, model, streams, "url", { postgres: { url: server.url, poolSize: 2 } }) };
  } finally {
    await server.close();
  }
}
