import OpenAI, { toFile } from "openai";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../src/config/key-hash.js";
import type { ConfigInput } from "../src/config/schema.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { type GatewayProcess, startGatewayProcess } from "./helpers/gateway-process.js";
import { FAR_TIMEOUTS } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { dropPrefix, dumpPrefix, SHARED_REDIS_URL, testPrefix } from "./helpers/redis.js";

/**
 * The done-when of issue #30's queue: three gateway processes share one
 * PostgreSQL (the lines) and one Redis (the BullMQ queue); the `openai`
 * SDK runs a 1,000-line batch through one of them; the third is killed
 * with SIGKILL while it holds lines mid-stream. The other two take its
 * lines when their lease runs out, and every line is answered once and
 * charged once (one ledger row per output line, none for the cut ones).
 */
const KEY = "sk-test-batch-replicas-3c9e1a7f5b2d4680";
const LINES = 1_000;
const LEASE_MS = 2_000;
const prefix = testPrefix("batch-replicas");

let database: OwnDatabase;
/**
 * A and B answer at once; C's simulator holds every stream after its first token, so C is killed with lines mid-stream.
 * C writes no ledger: a ledger reader killed with entries it had not acknowledged leaves them to the others after
 * ledger.claimIdleMs (test/ledger.test.ts proves that); here the rows are counted once A and B have stopped.
 */
let quick: Simulator;
let holding: Simulator;
let a: GatewayProcess;
let b: GatewayProcess;
let c: GatewayProcess;

function configFor(sim: Simulator, model: string, ledger: ConfigInput["ledger"] = { flushMs: 100 }): ConfigInput {
  return {
    log: { level: "info" },
    providers: { simulator: { kind: "openai", baseUrl: sim.openAiBaseUrl, timeouts: FAR_TIMEOUTS, breaker: { failures: 10_000 } } },
    models: { chat: { provider: "simulator", model, price: { inputPerMTok: 2, outputPerMTok: 10 } } },
    auth: { tagKeys: ["batch_id"], keys: [{ name: "batcher", sha256: sha256Hex(KEY) }] },
    store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000, replicas: 3 }, postgres: { url: database.url, poolSize: 4 } },
    ledger,
    batch: { concurrency: 2, leaseMs: LEASE_MS, maxFileBytes: 1024 * 1024 },
  };
}

beforeAll(async () => {
  database = await ownDatabase();
  [quick, holding] = await Promise.all([startSimulator(), startSimulator()]);
  // One process first, so the schema is migrated once before the others start.
  a = await startGatewayProcess(configFor(quick, "sim-1?tokens=3"));
  [b, c] = await Promise.all([startGatewayProcess(configFor(quick, "sim-1?tokens=3")), startGatewayProcess(configFor(holding, "sim-1?tokens=3&hold_at=1&tag=held", { enabled: false }))]);
}, 120_000);

afterAll(async () => {
  await Promise.all([a, b, c].filter(Boolean).map((g) => g.stop()));
  await Promise.all([quick?.close(), holding?.close()]);
  await database?.drop();
  await dropPrefix(prefix);
});

const chatLine = (i: number) => JSON.stringify({ custom_id: `line-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "chat", max_tokens: 8, messages: [{ role: "user", content: `zebra-question ${i}` }] } });

describe("a batch on the queue shared by three replicas", () => {
  it("answers and charges every line of a 1,000-line batch once, with one replica killed mid-batch", async () => {
    const sdk = new OpenAI({ baseURL: `${a.url}/v1`, apiKey: KEY, maxRetries: 0 });
    const file = await sdk.files.create({ file: await toFile(Buffer.from(Array.from({ length: LINES }, (_, i) => chatLine(i)).join("\n")), "big.jsonl"), purpose: "batch" });
    const batch = await sdk.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    expect(batch.status).toBe("in_progress");

    // C has taken lines and holds both mid-stream: kill it there, without a goodbye.
    await holding.records.waitFor((r) => r.heldAt !== undefined && holding.records.all().filter((x) => x.heldAt !== undefined).length >= 2, 60_000);
    c.child.kill("SIGKILL");
    await c.stop();

    const finished = await Promise.race([a, b].map((g) => g.waitForLine((l) => l.event === "batch.finished" && l.batch === batch.id, 180_000)));
    expect(finished.status).toBe("completed");

    const done = await sdk.batches.retrieve(batch.id);
    expect(done.status).toBe("completed");
    expect(done.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
    expect(done.error_file_id).toBeNull();
    const output = (await (await sdk.files.content(done.output_file_id!)).text())
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { id: string; custom_id: string; response: { status_code: number } });
    expect(output.map((l) => l.custom_id)).toEqual(Array.from({ length: LINES }, (_, i) => `line-${i}`));
    expect(output.every((l) => l.response.status_code === 200)).toBe(true);
    // The two lines C held were run again by A or B once C's lease ran out, and no line ran twice there.
    expect(holding.records.all().map((r) => r.outcome)).toEqual(["client_closed", "client_closed"]);
    expect(quick.records.all().length).toBe(LINES);
    expect(
      a
        .lines()
        .concat(b.lines())
        .filter((l) => l.event === "batch.line_duplicate"),
    ).toEqual([]);

    // Stopping A and B drains their ledgers: then every charge is a row.
    await Promise.all([a.stop(), b.stop()]);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const rows = (await client.query<{ request_id: string }>("SELECT request_id FROM sluice_ledger WHERE tags->>'batch_id' = $1", [batch.id])).rows;
      expect(rows.length).toBe(LINES);
      expect(new Set(rows.map((r) => r.request_id))).toEqual(new Set(output.map((l) => l.id)));
    } finally {
      await client.end();
    }
    // The queue holds ids only: no request text reached Redis.
    expect(await dumpPrefix(prefix)).not.toContain("zebra-question");
  }, 240_000);
});
