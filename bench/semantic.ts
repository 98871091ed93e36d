import { createServer } from "node:net";
import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import { createSemanticStore } from "../src/cache/semantic-store.js";
import type { Database } from "../src/db/database.js";
import { migrate } from "../src/db/migrations.js";
import { openPgDatabase } from "../src/db/pg-database.js";
import { openPgliteDatabase } from "../src/db/pglite-database.js";
import { cosine, embedText } from "../src/simulator/embedding-vectors.js";
import { questionPairs, rates } from "./paraphrases.js";
import { summary } from "./stats.js";

/** Dimensions of the stored vectors in the lookup measurement. */
const DIMS = 64;
const THRESHOLDS = [0.85, 0.92, 0.97] as const;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * A PostgreSQL server by URL, in this process: PGlite with pgvector behind
 * the Postgres wire protocol (the Debian server here has no pgvector), so
 * the database's work is on the benchmark's CPU, not the gateway's, as with
 * a real server.
 */
export async function servePgliteOverWire(): Promise<{ readonly url: string; close(): Promise<void> }> {
  const db = await PGlite.create({ extensions: { vector } });
  const port = await freePort();
  const server = new PGLiteSocketServer({ db, port, host: "127.0.0.1", maxConnections: 4 });
  await server.start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    close: async () => {
      await server.stop();
      await db.close();
    },
  };
}

/** Cosine similarity of every pair of the evaluation set, embedded by the simulator's model over its HTTP API. */
async function pairSimilarities(simOpenAi: string): Promise<Array<{ same: boolean; similarity: number }>> {
  const pairs = questionPairs();
  const input = pairs.flatMap((p) => [p.a, p.b]);
  const res = await fetch(`${simOpenAi}/embeddings`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "sim-embed", input, encoding_format: "float" }) });
  const body = (await res.json()) as { data: Array<{ embedding: number[] }> };
  return pairs.map((p, i) => ({ same: p.same, similarity: cosine(body.data[2 * i]!.embedding, body.data[2 * i + 1]!.embedding) }));
}

/** `entries` rows in one alias, scope and context (the worst case for the filter), loaded in batches. */
async function fill(db: Database, entries: number): Promise<void> {
  for (let from = 0; from < entries; from += 1_000) {
    const rows: string[] = [];
    for (let i = from; i < Math.min(entries, from + 1_000); i++) {
      const v = embedText(`question ${i} about topic ${i % 977} and item ${i % 131}`, DIMS);
      rows.push(`('bench', 'key=bench', 'ctx', ${DIMS}, '[${v.map((x) => x.toFixed(6)).join(",")}]', 'sealed', 'r${i}', now() + interval '1 day')`);
    }
    await db.query(`INSERT INTO sluice_semantic_cache (alias, scope, context, dims, embedding, answer, request_id, expires_at) VALUES ${rows.join(",")}`);
  }
  // Loaded behind the store's back: the statistics refresh it makes every ANALYZE_EVERY inserts, made here once.
  await db.query("ANALYZE sluice_semantic_cache");
}

/** Lookups before the timed ones. */
const WARM_UP_LOOKUPS = 100;

/** Lookup latency of the gateway's own SemanticStore.nearest (the embedding call excluded), after the index is built. */
async function lookups(db: Database, queries: number): Promise<{ p50: number; p99: number; indexBuildS: number }> {
  const store = createSemanticStore(() => db);
  const place = { alias: "bench", scope: "key=bench", context: "ctx" };
  const first = performance.now();
  await store.nearest(place, Float32Array.from(embedText("warm", DIMS))); // builds the HNSW index
  const indexBuildS = (performance.now() - first) / 1000;
  // A warm-up of other questions: the first lookups after the build read index pages the timed ones should find cached.
  for (let q = 0; q < WARM_UP_LOOKUPS; q++) await store.nearest(place, Float32Array.from(embedText(`warm-up ${q} about topic ${q * 7}`, DIMS)));
  const samples: number[] = [];
  for (let q = 0; q < queries; q++) {
    const v = Float32Array.from(embedText(`question ${q * 37} about topic ${q}`, DIMS));
    const started = performance.now();
    await store.nearest(place, v);
    samples.push(performance.now() - started);
  }
  const s = summary(samples);
  return { p50: s.p50, p99: s.p99, indexBuildS };
}

export interface SemanticResult {
  readonly entries: number;
  readonly dims: number;
  readonly lookupMs: { readonly pglite: { readonly p50: number; readonly p99: number; readonly indexBuildS: number }; readonly url: { readonly p50: number; readonly p99: number; readonly indexBuildS: number } };
  readonly pairs: { readonly positives: number; readonly negatives: number };
  readonly thresholds: ReadonlyArray<{ readonly threshold: number; readonly hitRate: number; readonly falseHitRate: number }>;
}

/**
 * The semantic cache's bench lines: nearest-entry lookups at `entries`
 * stored vectors on the embedded PGlite and on a server by URL (PGlite
 * behind the Postgres wire protocol), and the simulator model's hit and
 * false-hit rates on the evaluation set at three thresholds.
 */
export async function semanticScenario(simOpenAi: string, entries: number, queries: number, log: (line: string) => void): Promise<SemanticResult> {
  const similarities = await pairSimilarities(simOpenAi);
  const thresholds = THRESHOLDS.map((threshold) => ({ threshold, ...rates(similarities, threshold) }));
  for (const t of thresholds) log(`semantic pairs @${t.threshold}: hit rate ${(t.hitRate * 100).toFixed(1)}%, false hits ${(t.falseHitRate * 100).toFixed(1)}%`);

  const embedded = await openPgliteDatabase(undefined);
  let pglite: SemanticResult["lookupMs"]["pglite"];
  try {
    await migrate(embedded);
    await fill(embedded, entries);
    pglite = await lookups(embedded, queries);
  } finally {
    await embedded.close();
  }
  log(`semantic lookup, PGlite, ${entries} entries: p50 ${pglite.p50.toFixed(2)} ms p99 ${pglite.p99.toFixed(2)} ms (index built in ${pglite.indexBuildS.toFixed(1)} s)`);

  const server = await servePgliteOverWire();
  let url: SemanticResult["lookupMs"]["url"];
  try {
    const remote = openPgDatabase(server.url, 2, () => undefined);
    try {
      await migrate(remote);
      await fill(remote, entries);
      url = await lookups(remote, queries);
    } finally {
      await remote.close();
    }
  } finally {
    await server.close();
  }
  log(`semantic lookup, URL mode (PGlite over the wire), ${entries} entries: p50 ${url.p50.toFixed(2)} ms p99 ${url.p99.toFixed(2)} ms (index built in ${url.indexBuildS.toFixed(1)} s)`);
  return { entries, dims: DIMS, lookupMs: { pglite, url }, pairs: { positives: similarities.filter((s) => s.same).length, negatives: similarities.filter((s) => !s.same).length }, thresholds };
}
