import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSemanticStore } from "../src/cache/semantic-store.js";
import { MIGRATIONS } from "../src/db/migrations.js";
import { openPgDatabase } from "../src/db/pg-database.js";
import { simulatedText } from "../src/simulator/text.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { freePort } from "./helpers/redis.js";

/**
 * store.postgres.url against a real Postgres wire protocol with pgvector:
 * PGlite served by pglite-socket (Debian's postgresql has no pgvector here).
 */
const DB_START_MS = 90_000;

let db: PGlite;
let server: PGLiteSocketServer;
const replicas: Harness[] = [];
let url = "";
beforeAll(async () => {
  db = await PGlite.create({ extensions: { vector } });
  const port = await freePort();
  server = new PGLiteSocketServer({ db, port, host: "127.0.0.1", maxConnections: 8 });
  await server.start();
  url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  for (let i = 0; i < 2; i++) {
    replicas.push(
      await startHarness({
        routing: (sim) => ({
          providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
          models: {
            emb: { provider: "sim", model: "sim-embed" },
            faq: { provider: "sim", model: "sim-1?tokens=5&seed=9", cache: { semantic: { embeddingModel: "emb", threshold: 0.9 } } },
          },
        }),
        store: { postgres: { url, poolSize: 2 } },
        // Far beyond a healthy lookup on a loaded machine: a slow query must not turn an expected hit into a miss.
        cache: { lookupTimeoutMs: 5_000 },
      }),
    );
  }
  await Promise.all(replicas.map((h) => h.waitForLog((l) => l.event === "db.ready", DB_START_MS)));
}, DB_START_MS + 30_000);
afterAll(async () => {
  for (const h of replicas) await h.close();
  await server.stop();
  await db.close();
});

async function ask(h: Harness, question: string) {
  const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const { data, response } = await client.chat.completions.create({ model: "faq", messages: [{ role: "user", content: question }] }).withResponse();
  return { text: data.choices[0]!.message.content, cache: response.headers.get("sluice-cache"), requestId: response.headers.get("x-request-id")! };
}

describe("the semantic cache on a PostgreSQL server by URL", () => {
  it("migrates once, and two replicas share it: one stores, the other answers a reworded question", async () => {
    const versions = await db.query<{ version: number }>("SELECT version FROM sluice_schema_migrations ORDER BY version");
    // Every step, once (this server has pgvector, so none waits).
    expect(versions.rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version).sort((a, b) => a - b));
    const [a, b] = replicas;
    const first = await ask(a!, "Which documents do I need to open an account?");
    expect(first.cache).toBe("miss");
    await a!.waitForLog((l) => l.event === "cache.stored" && l.layer === "semantic" && l.requestId === first.requestId);
    const other = await ask(b!, "Which documents do I need to open an account");
    expect(other).toMatchObject({ cache: "hit-semantic", text: simulatedText(9, 5) });
    expect(b!.sim.records.all().filter((r) => r.format === "openai")).toHaveLength(0);
    // The answer is sealed: the row holds neither the question nor the answer in plaintext.
    const rows = await db.query<{ answer: string; context: string }>("SELECT answer, context FROM sluice_semantic_cache");
    expect(rows.rows).toHaveLength(1);
    expect(rows.rows[0]!.answer).not.toContain(simulatedText(9, 5));
    expect(JSON.stringify(rows.rows)).not.toContain("documents");
  });

  it("removes the entry one request produced, by that request's id (PurgeCache by entry id), over the wire", async () => {
    const [a, b] = replicas;
    const first = await ask(a!, "How long does a wire transfer take?");
    await a!.waitForLog((l) => l.event === "cache.stored" && l.layer === "semantic" && l.requestId === first.requestId);
    const before = Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM sluice_semantic_cache")).rows[0]!.n);
    const remote = openPgDatabase(url, 1, () => undefined);
    try {
      const store = createSemanticStore(() => remote);
      expect(await store.purgeProducedBy(first.requestId)).toBe(1);
      expect(await store.purgeProducedBy(first.requestId)).toBe(0);
    } finally {
      await remote.close();
    }
    expect(Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM sluice_semantic_cache")).rows[0]!.n)).toBe(before - 1);
    expect((await ask(b!, "How long does a wire transfer take")).cache).toBe("miss");
  });
});
