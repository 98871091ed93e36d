import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import OpenAI, { toFile } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BatchEndpoint, BatchService, BatchStatus } from "../gen/sluice/v1/batch_service_pb.js";
import { type Harness, type HarnessOptions, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { scrape } from "./helpers/prometheus.js";
import { dropPrefix, type OwnRedis, SHARED_REDIS_URL, startOwnRedis, testPrefix } from "./helpers/redis.js";
import { tenancyEvents } from "./helpers/tenancy-events.js";

const KEYS = { owner: "sk-test-batch-owner-4a1c7e9b2d5f8036", other: "sk-test-batch-other-9e3b1d7f5a2c4680", poor: "sk-test-batch-poor-1f4a7c0e3b6d9258" };
/** Two dollars per million input tokens, ten per million output tokens. */
const PRICE = { inputPerMTok: 2, outputPerMTok: 10 };
/** A fresh PGlite takes 10–16 s to start on a loaded machine (docs: TOOLCHAIN.md). */
const DB_TIMEOUT = 90_000;

const options = (extra: Partial<HarnessOptions> = {}): HarnessOptions => ({
  routing: (sim) => ({
    providers: { oa: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
    models: { chat: { provider: "oa", model: "sim-1", price: PRICE }, embed: { provider: "oa", model: "sim-embed", price: PRICE } },
  }),
  env: { OWNER_KEY: KEYS.owner, OTHER_KEY: KEYS.other, POOR_KEY: KEYS.poor },
  auth: {
    tagKeys: ["batch_id"],
    keys: [
      { name: "owner", keyEnv: "OWNER_KEY" },
      { name: "other", keyEnv: "OTHER_KEY" },
      // 40 output tokens cost 400 micro-dollars: the budget is spent by the first few lines.
      { name: "poor", keyEnv: "POOR_KEY", budget: { usd: 0.002, period: "day" } },
    ],
  },
  batch: { concurrency: 2, maxFileBytes: 64 * 1024 },
  ...extra,
});

/** A JSONL batch file of `{custom_id, method, url, body}` lines. */
function jsonl(lines: ReadonlyArray<{ custom_id: string; url?: string; body: object }>): string {
  return lines.map((l) => JSON.stringify({ custom_id: l.custom_id, method: "POST", url: l.url ?? "/v1/chat/completions", body: l.body })).join("\n") + "\n";
}

const chatLine = (id: string, knobs: string) => ({ custom_id: id, body: { model: "chat", messages: [{ role: "user", content: `#sim ${knobs}\nhello ${id}` }] } });

interface OutputLine {
  readonly id: string;
  readonly custom_id: string;
  readonly response: { readonly status_code: number; readonly request_id: string; readonly body: Record<string, unknown> } | null;
  readonly error: { readonly code: string; readonly message: string } | null;
}

async function linesOf(client: OpenAI, fileId: string | null | undefined): Promise<OutputLine[]> {
  if (!fileId) return [];
  const text = await (await client.files.content(fileId)).text();
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as OutputLine);
}

async function upload(client: OpenAI, content: string): Promise<string> {
  const file = await client.files.create({ file: await toFile(Buffer.from(content), "batch.jsonl"), purpose: "batch" });
  return file.id;
}

/** Where a suite keeps its batches: the store section, and how to clean up after it. */
interface Backing {
  readonly store?: HarnessOptions["store"];
  readonly cleanup: () => Promise<void>;
}

/**
 * The same behaviour on both queues: the in-process one (embedded PGlite,
 * no Redis) and the one replicas share (BullMQ on Redis, a PostgreSQL
 * server), whose cancel and budget stop go through the database instead
 * of one process's memory.
 */
const BACKINGS: ReadonlyArray<readonly [string, () => Promise<Backing>]> = [
  ["an in-process queue", () => Promise.resolve({ cleanup: () => Promise.resolve() })],
  [
    "the queue replicas share (BullMQ on Redis, PostgreSQL)",
    async () => {
      const database = await ownDatabase();
      const prefix = testPrefix("batches");
      return {
        store: { redis: { url: SHARED_REDIS_URL, prefix, failMode: "closed", timeoutMs: 5_000 }, postgres: { url: database.url, poolSize: 4 } },
        cleanup: async () => {
          await database.drop();
          await dropPrefix(prefix);
        },
      };
    },
  ],
];

describe.each(BACKINGS)("the OpenAI Batch API on %s", (_name, backing) => {
  const events = tenancyEvents();
  let h: Harness;
  let backed: Backing | undefined;
  const client = (key: string) => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: key, maxRetries: 0 });

  beforeAll(async () => {
    backed = await backing();
    h = await startHarness(options({ observer: events.observer, ...(backed.store ? { store: backed.store } : {}) }));
    // The first batch call opens the database.
    await upload(client(KEYS.owner), jsonl([chatLine("warm", "tokens=1")]));
  }, DB_TIMEOUT);
  afterAll(async () => {
    await h?.close();
    await backed?.cleanup();
  });

  it(
    "runs 50 chat lines to completion: every custom_id answered once with a chat.completion",
    async () => {
      const owner = client(KEYS.owner);
      const ids = Array.from({ length: 50 }, (_, i) => `req-${i}`);
      const inputFileId = await upload(owner, jsonl(ids.map((id) => chatLine(id, `tokens=3 tag=run-${id}`))));
      const completedBefore = (await scrape(`${h.url}/metrics`)).value("sluice_batch_lines_total", { sluice_batch_status: "completed" });
      const created = await owner.batches.create({ input_file_id: inputFileId, endpoint: "/v1/chat/completions", completion_window: "24h", metadata: { job: "nightly" } });
      expect(created).toMatchObject({ object: "batch", status: "in_progress", endpoint: "/v1/chat/completions", input_file_id: inputFileId, request_counts: { total: 50, completed: 0, failed: 0 }, metadata: { job: "nightly" } });

      await h.sluice.batches.settled(created.id);
      const done = await owner.batches.retrieve(created.id);
      expect(done).toMatchObject({ status: "completed", request_counts: { total: 50, completed: 50, failed: 0 }, error_file_id: null });
      expect(done.completed_at).toBeGreaterThanOrEqual(done.created_at);

      const output = await linesOf(owner, done.output_file_id);
      expect(output.map((l) => l.custom_id).sort()).toEqual([...ids].sort());
      for (const line of output) {
        expect(line.error).toBeNull();
        expect(line.response).toMatchObject({ status_code: 200, body: { object: "chat.completion", choices: [{ message: { role: "assistant" }, finish_reason: "stop" }] } });
        expect(line.id).toMatch(/^batch_req_/);
        expect(line.response!.request_id).toBe(line.id);
      }
      // The simulator saw each line once.
      for (const id of ids) expect(h.sim.records.all().filter((r) => r.tag === `run-${id}`)).toHaveLength(1);
      // Each line has a usage record of the owner's key, tagged with the batch id.
      const records = await Promise.all(output.map((line) => events.recorded(line.id)));
      for (const record of records) expect(record).toMatchObject({ key: "owner", alias: "chat", tags: { batch_id: created.id }, outcome: "completed" });
      const file = await owner.files.retrieve(done.output_file_id!);
      expect(file).toMatchObject({ object: "file", purpose: "batch_output" });

      const page = await owner.batches.list({ limit: 100 });
      expect(page.data.map((b) => b.id)).toContain(created.id);
      // Progress is a metric too: one count per line finished.
      expect((await scrape(`${h.url}/metrics`)).value("sluice_batch_lines_total", { sluice_batch_status: "completed" }) - completedBefore).toBe(50);
    },
    DB_TIMEOUT,
  );

  it(
    "writes one access line per batch line (edge openai-batch), answered or refused, under the line's request id",
    async () => {
      const owner = client(KEYS.owner);
      const lines = [chatLine("cid-served-1c9e", "tokens=2"), chatLine("cid-served-2d4b", "tokens=2"), { custom_id: "cid-refused-7f3a", body: { model: "nope", messages: [{ role: "user", content: "hi" }] } }];
      const created = await owner.batches.create({ input_file_id: await upload(owner, jsonl(lines)), endpoint: "/v1/chat/completions", completion_window: "24h" });
      await h.sluice.batches.settled(created.id);
      const done = await owner.batches.retrieve(created.id);
      const results = [...(await linesOf(owner, done.output_file_id)), ...(await linesOf(owner, done.error_file_id))];
      expect(results).toHaveLength(3);
      for (const result of results) {
        const access = await h.waitForLog((l) => l.event === "access" && l.requestId === result.id);
        expect(access).toMatchObject({ level: 30, edge: "openai-batch", route: "/v1/chat/completions", method: "POST", batchId: created.id, key: "owner", status: result.response!.status_code });
        if (result.custom_id === "cid-refused-7f3a") expect(access).toMatchObject({ status: 404, code: "unknown_model" });
        else expect(access).toMatchObject({ code: "ok", alias: "chat", outputTokens: 2, durationMs: expect.any(Number) });
        expect(JSON.stringify(access)).not.toContain(result.custom_id); // the client's own text stays out
      }
    },
    DB_TIMEOUT,
  );

  it("runs an embeddings batch", async () => {
    const owner = client(KEYS.owner);
    const lines = ["alpha", "beta", "gamma"].map((text) => ({ custom_id: text, url: "/v1/embeddings", body: { model: "embed", input: text } }));
    const created = await owner.batches.create({ input_file_id: await upload(owner, jsonl(lines)), endpoint: "/v1/embeddings", completion_window: "24h" });
    await h.sluice.batches.settled(created.id);
    const done = await owner.batches.retrieve(created.id);
    expect(done).toMatchObject({ status: "completed", request_counts: { total: 3, completed: 3, failed: 0 } });
    const output = await linesOf(owner, done.output_file_id);
    expect(output.map((l) => l.custom_id).sort()).toEqual(["alpha", "beta", "gamma"]);
    for (const line of output) {
      expect(line.response).toMatchObject({ status_code: 200, body: { object: "list", model: "embed", data: [{ object: "embedding", index: 0 }] } });
      expect((line.response!.body.data as Array<{ embedding: number[] }>)[0]!.embedding.length).toBeGreaterThan(0);
    }
  });

  it("cancels mid-batch: running lines finish, no new line starts, the batch ends cancelled with what finished", async () => {
    const owner = client(KEYS.owner);
    const ids = Array.from({ length: 8 }, (_, i) => `hold-${i}`);
    const created = await owner.batches.create({
      input_file_id: await upload(owner, jsonl(ids.map((id) => chatLine(id, `tokens=3 hold_at=1 tag=${id}`)))),
      endpoint: "/v1/chat/completions",
      completion_window: "24h",
    });
    // Concurrency 2: the first two lines run and hold.
    await Promise.all(["hold-0", "hold-1"].map((tag) => h.sim.records.waitFor((r) => r.tag === tag && r.heldAt !== undefined, 30_000)));
    const cancelling = await owner.batches.cancel(created.id);
    expect(cancelling.status).toBe("cancelling");
    expect(cancelling.cancelling_at).toBeGreaterThan(0);
    h.sim.records.release("hold-0");
    h.sim.records.release("hold-1");
    await h.sluice.batches.settled(created.id);
    const done = await owner.batches.retrieve(created.id);
    expect(done).toMatchObject({ status: "cancelled", request_counts: { total: 8, completed: 2, failed: 0 } });
    expect((await linesOf(owner, done.output_file_id)).map((l) => l.custom_id).sort()).toEqual(["hold-0", "hold-1"]);
    for (const id of ids.slice(2)) expect(h.sim.records.all().some((r) => r.tag === id)).toBe(false);
  });

  it("refuses a bad file with 400: a duplicate custom_id, a url batches do not run, a line for another endpoint", async () => {
    const owner = client(KEYS.owner);
    const duplicate = jsonl([chatLine("same", "tokens=1"), chatLine("same", "tokens=1")]);
    await expect(upload(owner, duplicate)).rejects.toMatchObject({ status: 400, error: { param: "file", message: expect.stringContaining("line 2") } });
    const wrongUrl = jsonl([{ ...chatLine("a", "tokens=1"), url: "/v1/completions" }]);
    await expect(upload(owner, wrongUrl)).rejects.toMatchObject({ status: 400, error: { message: expect.stringContaining("/v1/completions") } });
    await expect(upload(owner, "not json\n")).rejects.toMatchObject({ status: 400 });
    const embeddingsFile = await upload(owner, jsonl([{ custom_id: "e", url: "/v1/embeddings", body: { model: "embed", input: "x" } }]));
    await expect(owner.batches.create({ input_file_id: embeddingsFile, endpoint: "/v1/chat/completions", completion_window: "24h" })).rejects.toMatchObject({
      status: 400,
      error: { param: "input_file_id" },
    });
    const streamed = await upload(owner, jsonl([{ custom_id: "s", body: { model: "chat", stream: true, messages: [{ role: "user", content: "hi" }] } }]));
    await expect(owner.batches.create({ input_file_id: streamed, endpoint: "/v1/chat/completions", completion_window: "24h" })).rejects.toMatchObject({ status: 400 });
  });

  it("refuses a file over batch.maxFileBytes with 413, however far over", async () => {
    const owner = client(KEYS.owner);
    // Past the limit but within the envelope's room: the file part's size; far past it: refused while it is read.
    for (const size of [80 * 1024, 400 * 1024]) {
      await expect(upload(owner, "x".repeat(size))).rejects.toMatchObject({ status: 413, error: { param: "file", message: expect.stringContaining("batch.maxFileBytes") } });
    }
  });

  it("shows a key only its own files and batches (404 otherwise), and asks for a key", async () => {
    const owner = client(KEYS.owner);
    const other = client(KEYS.other);
    const inputFileId = await upload(owner, jsonl([chatLine("mine", "tokens=1")]));
    const created = await owner.batches.create({ input_file_id: inputFileId, endpoint: "/v1/chat/completions", completion_window: "24h" });
    await h.sluice.batches.settled(created.id);
    const done = await owner.batches.retrieve(created.id);
    await expect(other.batches.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.batches.cancel(created.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.files.retrieve(inputFileId)).rejects.toMatchObject({ status: 404 });
    await expect(other.files.content(done.output_file_id!)).rejects.toMatchObject({ status: 404 });
    await expect(other.batches.create({ input_file_id: inputFileId, endpoint: "/v1/chat/completions", completion_window: "24h" })).rejects.toMatchObject({ status: 404 });
    expect((await other.batches.list()).data.map((b) => b.id)).not.toContain(created.id);
    await expect(client("sk-wrong").batches.list()).rejects.toMatchObject({ status: 401 });
  });

  it("stops a batch whose key runs out of budget: the rest of its lines fail as budget_exceeded, none skipped", async () => {
    const poor = client(KEYS.poor);
    const ids = Array.from({ length: 12 }, (_, i) => `poor-${i}`);
    const created = await poor.batches.create({
      input_file_id: await upload(poor, jsonl(ids.map((id) => ({ custom_id: id, body: { ...chatLine(id, "tokens=40").body, max_tokens: 50 } })))),
      endpoint: "/v1/chat/completions",
      completion_window: "24h",
    });
    await h.sluice.batches.settled(created.id);
    const done = await poor.batches.retrieve(created.id);
    expect(done.status).toBe("completed");
    const output = await linesOf(poor, done.output_file_id);
    const errors = await linesOf(poor, done.error_file_id);
    expect([...output, ...errors].map((l) => l.custom_id).sort()).toEqual([...ids].sort());
    expect(done.request_counts).toEqual({ total: 12, completed: output.length, failed: errors.length });
    expect(output.length).toBeGreaterThan(0);
    const refused = errors.filter((l) => l.response !== null);
    expect(refused.length).toBeGreaterThan(0);
    for (const line of refused) expect(line.response).toMatchObject({ status_code: 402, body: { error: { code: "budget_exceeded" } } });
    const notRun = errors.filter((l) => l.response === null);
    expect(notRun.length).toBeGreaterThan(0);
    for (const line of notRun) expect(line.error).toMatchObject({ code: "budget_exceeded" });
  });
});

describe("a batch survives a restart on a database directory", () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "sluice-batches-"));
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it(
    "a new gateway on the same database finishes the batch, and no line with a result runs again",
    async () => {
      const ids = Array.from({ length: 6 }, (_, i) => `restart-${i}`);
      // Lines 0 and 1 answer at once; lines 2 and 3 then hold (concurrency 2), and the gateway closes under them.
      const body = jsonl(ids.map((id, i) => chatLine(id, i < 2 ? `tokens=2 tag=${id}` : `tokens=2 hold_at=1 tag=${id}`)));
      const first = await startHarness(options({ store: { postgres: { dataDir } } }));
      let batchId: string;
      try {
        const owner = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: KEYS.owner, maxRetries: 0 });
        const created = await owner.batches.create({ input_file_id: await upload(owner, body), endpoint: "/v1/chat/completions", completion_window: "24h" });
        batchId = created.id;
        await Promise.all(["restart-2", "restart-3"].map((tag) => first.sim.records.waitFor((r) => r.tag === tag && r.heldAt !== undefined, 30_000)));
        expect(await owner.batches.retrieve(batchId)).toMatchObject({ status: "in_progress", request_counts: { completed: 2 } });
      } finally {
        await first.close();
      }

      const second = await startHarness(options({ store: { postgres: { dataDir } } }));
      try {
        // A release before the hold is kept: the resumed lines run through.
        for (const id of ids) second.sim.records.release(id);
        const owner = new OpenAI({ baseURL: `${second.url}/v1`, apiKey: KEYS.owner, maxRetries: 0 });
        // The resume runs once the database is open: wait until this gateway holds the batch, then until it is finished.
        const resumed = await second.waitForLog((line) => line.event === "batch.resumed", DB_TIMEOUT);
        expect(resumed).toMatchObject({ batches: 1 });
        await second.sluice.batches.settled(batchId);
        const done = await owner.batches.retrieve(batchId);
        expect(done).toMatchObject({ status: "completed", request_counts: { total: 6, completed: 6, failed: 0 } });
        expect((await linesOf(owner, done.output_file_id)).map((l) => l.custom_id).sort()).toEqual([...ids].sort());
        // The lines answered before the restart never reached the new gateway's upstream; the others reached it once.
        for (const id of ids) expect(second.sim.records.all().filter((r) => r.tag === id)).toHaveLength(id === "restart-0" || id === "restart-1" ? 0 : 1);
      } finally {
        await second.close();
      }
    },
    3 * DB_TIMEOUT,
  );
});

/**
 * A gateway on the shared queue over a redis-server of the test's own (which it may kill and restart) and a
 * database of its own, one-second leases; Redis `down` kills it before the gateway starts.
 */
function useSharedQueueOnOwnRedis(name: string, redisAtStart: "up" | "down") {
  const gw = { redis: undefined as unknown as OwnRedis, h: undefined as unknown as Harness, database: undefined as OwnDatabase | undefined };
  beforeAll(async () => {
    [gw.redis, gw.database] = await Promise.all([startOwnRedis(), ownDatabase()]);
    if (redisAtStart === "down") await gw.redis.kill();
    gw.h = await startHarness(options({ store: { redis: { url: gw.redis.url, prefix: testPrefix(name), failMode: "open", timeoutMs: 1_000 }, postgres: { url: gw.database.url, poolSize: 4 } }, batch: { concurrency: 2, leaseMs: 1_000 } }));
  }, DB_TIMEOUT);
  afterAll(async () => {
    await gw.h?.close();
    await gw.redis?.kill();
    await gw.database?.drop();
  });
  return gw;
}

describe("the shared queue loses its Redis", () => {
  const gw = useSharedQueueOnOwnRedis("batch-redis-lost", "up");

  it(
    "queues the batch again from the database when Redis comes back empty, and no line runs twice",
    async () => {
      const { h, redis } = gw;
      const owner = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEYS.owner, maxRetries: 0 });
      const ids = Array.from({ length: 10 }, (_, i) => `lost-${i}`);
      // The first two lines hold mid-stream while Redis goes away and comes back without its data (no persistence).
      const body = jsonl(ids.map((id, i) => chatLine(id, i < 2 ? `tokens=2 hold_at=1 tag=${id}` : `tokens=2 tag=${id}`)));
      const created = await owner.batches.create({ input_file_id: await upload(owner, body), endpoint: "/v1/chat/completions", completion_window: "24h" });
      await Promise.all(["lost-0", "lost-1"].map((tag) => h.sim.records.waitFor((r) => r.tag === tag && r.heldAt !== undefined, 30_000)));
      await redis.kill();
      await redis.restart();
      h.sim.records.release("lost-0");
      h.sim.records.release("lost-1");
      const requeued = await h.waitForLog((line) => line.event === "batch.requeued", 60_000);
      expect(requeued).toMatchObject({ batches: 1 });
      await h.sluice.batches.settled(created.id);
      const done = await owner.batches.retrieve(created.id);
      expect(done).toMatchObject({ status: "completed", request_counts: { total: 10, completed: 10, failed: 0 } });
      expect((await linesOf(owner, done.output_file_id)).map((l) => l.custom_id).sort()).toEqual([...ids].sort());
      for (const id of ids) expect(h.sim.records.all().filter((r) => r.tag === id)).toHaveLength(1);
    },
    2 * DB_TIMEOUT,
  );
});

describe("batch lines use spare capacity", () => {
  let database: OwnDatabase;
  let h: Harness;

  beforeAll(async () => {
    database = await ownDatabase();
    h = await startHarness({
      ...options({ store: { postgres: { url: database.url, poolSize: 4 } }, batch: { concurrency: 4, maxShare: 0.25 } }),
      routing: (sim) => ({
        providers: { oa: { kind: "openai", baseUrl: sim.openAiBaseUrl, maxConcurrent: 4, breaker: { failures: 10_000 } } },
        models: { chat: { provider: "oa", model: "sim-1", price: PRICE }, embed: { provider: "oa", model: "sim-embed", price: PRICE } },
      }),
    });
  }, DB_TIMEOUT);
  afterAll(async () => {
    await h?.close();
    await database?.drop();
  });

  it("takes at most batch.maxShare of the provider's streams, and interactive calls go first", async () => {
    const owner = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEYS.owner, maxRetries: 0 });
    const ids = ["share-0", "share-1", "share-2"];
    const created = await owner.batches.create({
      input_file_id: await upload(owner, jsonl(ids.map((id) => chatLine(id, `tokens=2 hold_at=1 tag=${id}`)))),
      endpoint: "/v1/chat/completions",
      completion_window: "24h",
    });
    // A quarter of 4 streams is one: one line runs, the other two wait at the gate although batch.concurrency is 4.
    await h.sim.records.waitFor((r) => r.tag === "share-0" && r.heldAt !== undefined, 30_000);
    const gate = await h.sluice.gates.until("oa", (g) => g.backgroundWaiting === 2);
    expect(gate.backgroundInFlight).toBe(1);
    // Interactive calls fill the other three streams; a fourth waits.
    const interactive = ["i-0", "i-1", "i-2", "i-3"].map((tag) => owner.chat.completions.create({ model: "chat", messages: [{ role: "user", content: `#sim tokens=2 hold_at=1 tag=${tag}\nhi` }] }));
    await Promise.all(["i-0", "i-1", "i-2"].map((tag) => h.sim.records.waitFor((r) => r.tag === tag && r.heldAt !== undefined, 30_000)));
    await h.sluice.gates.until("oa", (g) => g.waiting === 1);
    // The batch line ends: its stream goes to the waiting interactive call, not to the next line.
    h.sim.records.release("share-0");
    await h.sim.records.waitFor((r) => r.tag === "i-3" && r.heldAt !== undefined, 30_000);
    expect(h.sim.records.all().some((r) => r.tag === "share-1" || r.tag === "share-2")).toBe(false);
    expect({ background: gate.backgroundInFlight, waiting: gate.backgroundWaiting }).toEqual({ background: 0, waiting: 2 });
    for (const tag of ["i-0", "i-1", "i-2", "i-3", "share-1", "share-2"]) h.sim.records.release(tag);
    await Promise.all(interactive);
    await h.sluice.batches.settled(created.id);
    expect(await owner.batches.retrieve(created.id)).toMatchObject({ status: "completed", request_counts: { total: 3, completed: 3, failed: 0 } });
  });
});

describe("sluice.v1.BatchService: the same batches over gRPC, typed", () => {
  let h: Harness;
  let database: OwnDatabase;
  const batchClient = (key: string) => createClient(BatchService, createGrpcTransport({ baseUrl: h.url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${key}`), next(req))] }));

  beforeAll(async () => {
    database = await ownDatabase();
    h = await startHarness(options({ store: { postgres: { url: database.url, poolSize: 4 } } }));
  }, DB_TIMEOUT);
  afterAll(async () => {
    await h?.close();
    await database?.drop();
  });

  it("uploads, creates, follows and reads a batch; the facade sees the same batch; another key sees nothing", async () => {
    const owner = batchClient(KEYS.owner);
    const ids = ["g-0", "g-1", "g-2"];
    const { file } = await owner.uploadFile({ content: Buffer.from(jsonl(ids.map((id) => chatLine(id, "tokens=2")))), filename: "typed.jsonl" });
    expect(file).toMatchObject({ purpose: "batch", filename: "typed.jsonl" });
    const { batch: created } = await owner.createBatch({ inputFileId: file!.id, endpoint: BatchEndpoint.CHAT_COMPLETIONS, metadata: { job: "grpc" } });
    expect(created).toMatchObject({ status: BatchStatus.IN_PROGRESS, endpointPath: "/v1/chat/completions", requestCounts: { total: 3 }, metadata: { job: "grpc" } });

    await h.sluice.batches.settled(created!.id);
    const { batch: done } = await owner.getBatch({ id: created!.id });
    expect(done).toMatchObject({ status: BatchStatus.COMPLETED, requestCounts: { total: 3, completed: 3, failed: 0 }, errorFileId: "" });
    expect(done!.completedAt).toBeDefined();
    const { content } = await owner.getFileContent({ id: done!.outputFileId });
    const lines = Buffer.from(content)
      .toString("utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as OutputLine);
    expect(lines.map((l) => l.custom_id)).toEqual(ids);
    for (const line of lines) expect(line.response).toMatchObject({ status_code: 200, body: { object: "chat.completion" } });

    // The facade reads the same batch, and the typed list holds it.
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEYS.owner, maxRetries: 0 });
    expect(await sdk.batches.retrieve(created!.id)).toMatchObject({ status: "completed", output_file_id: done!.outputFileId, metadata: { job: "grpc" } });
    const page = await owner.listBatches({ limit: 10 });
    expect(page.batches.map((b) => b.id)).toContain(created!.id);

    const other = batchClient(KEYS.other);
    await expect(other.getBatch({ id: created!.id })).rejects.toMatchObject({ code: Code.NotFound });
    await expect(other.getFileContent({ id: done!.outputFileId })).rejects.toMatchObject({ code: Code.NotFound });
    await expect(batchClient("sk-wrong").listBatches({})).rejects.toMatchObject({ code: Code.Unauthenticated });
  });

  it("refuses what the facade refuses, with the gRPC code: a bad line, no endpoint, a bad page size", async () => {
    const owner = batchClient(KEYS.owner);
    const duplicate = Buffer.from(jsonl([chatLine("same", "tokens=1"), chatLine("same", "tokens=1")]));
    await expect(owner.uploadFile({ content: duplicate })).rejects.toMatchObject({ code: Code.InvalidArgument, rawMessage: expect.stringContaining("line 2") });
    await expect(owner.uploadFile({ content: Buffer.from([0xff, 0xfe]) })).rejects.toMatchObject({ code: Code.InvalidArgument });
    const { file } = await owner.uploadFile({ content: Buffer.from(jsonl([chatLine("x", "tokens=1")])) });
    await expect(owner.createBatch({ inputFileId: file!.id })).rejects.toMatchObject({ code: Code.InvalidArgument, rawMessage: expect.stringContaining("endpoint") });
    await expect(owner.createBatch({ inputFileId: file!.id, endpoint: BatchEndpoint.EMBEDDINGS })).rejects.toMatchObject({ code: Code.InvalidArgument, rawMessage: expect.stringContaining("line 1") });
    await expect(owner.listBatches({ limit: 1000 })).rejects.toMatchObject({ code: Code.InvalidArgument });
  });
});

describe("the shared queue on a Redis that is down when the gateway starts", () => {
  const gw = useSharedQueueOnOwnRedis("batch-redis-late", "down");

  it(
    "takes batches while Redis is away and runs them once it answers",
    async () => {
      const { h, redis } = gw;
      const owner = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEYS.owner, maxRetries: 0 });
      const ids = Array.from({ length: 6 }, (_, i) => `late-${i}`);
      const created = await owner.batches.create({ input_file_id: await upload(owner, jsonl(ids.map((id) => chatLine(id, `tokens=2 tag=${id}`)))), endpoint: "/v1/chat/completions", completion_window: "24h" });
      expect(created.status).toBe("in_progress");
      expect(h.sim.records.all().some((r) => ids.includes(r.tag ?? ""))).toBe(false);
      await redis.restart();
      await h.sluice.batches.settled(created.id);
      const done = await owner.batches.retrieve(created.id);
      expect(done).toMatchObject({ status: "completed", request_counts: { total: 6, completed: 6, failed: 0 } });
      for (const id of ids) expect(h.sim.records.all().filter((r) => r.tag === id)).toHaveLength(1);
    },
    2 * DB_TIMEOUT,
  );
});
