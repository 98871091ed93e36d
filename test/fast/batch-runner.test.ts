import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { readBatchFile } from "../../src/batch/batch-file.js";
import { createBatchRunner, type LineExecutor } from "../../src/batch/batch-runner.js";
import type { BatchStore, LineResult, PendingLine, StoredBatch } from "../../src/batch/batch-store.js";
import { createLogger } from "../../src/logging/logger.js";

const logger = createLogger("error", new PassThrough());

/** A batch store in memory: one batch's lines and results, enough for the runner. */
function memoryStore(count: number, done: readonly string[] = []) {
  const lines: PendingLine[] = Array.from({ length: count }, (_, i) => ({ customId: `c${i}`, line: i + 1, body: "{}" }));
  const results = new Map<string, LineResult>(done.map((id) => [id, { ok: true, text: `${id}:before` }]));
  let status: StoredBatch["status"] = "in_progress";
  const batch = (): StoredBatch => ({
    id: "b",
    owner: "",
    endpoint: "/v1/chat/completions",
    inputFileId: "f",
    completionWindow: "24h",
    metadata: null,
    status,
    counts: { total: count, completed: [...results.values()].filter((r) => r.ok).length, failed: [...results.values()].filter((r) => !r.ok).length },
    skipped: 0,
    stopped: false,
    outputFileId: null,
    errorFileId: null,
    times: { createdAt: 0, inProgressAt: 0, expiresAt: null, finalizingAt: null, completedAt: null, cancellingAt: null, cancelledAt: null },
  });
  const store: Pick<BatchStore, "batch" | "pending" | "finishLine" | "failRest" | "finish" | "resumable"> = {
    batch: async () => batch(),
    pending: async (_id, after, limit) => lines.filter((l) => l.line > after && !results.has(l.customId)).slice(0, limit),
    finishLine: async (_id, customId, result) => {
      if (results.has(customId)) return false;
      results.set(customId, result);
      return true;
    },
    failRest: async (_id, result) => {
      const rest = lines.filter((l) => !results.has(l.customId));
      for (const l of rest) results.set(l.customId, result(l));
      return rest.length;
    },
    finish: async () => {
      status = status === "cancelling" ? "cancelled" : "completed";
      return batch();
    },
    resumable: async () => ["b"],
  };
  return { store: store as BatchStore, results, status: () => status, cancelling: () => (status = "cancelling") };
}

/** An executor whose lines wait until the test lets them go, counting how many run at once. */
function heldExecutor(outcome: (line: PendingLine) => { ok: boolean; stop?: boolean } = () => ({ ok: true })) {
  const waiting: Array<() => void> = [];
  const ran: string[] = [];
  let running = 0;
  let most = 0;
  const executor: LineExecutor = {
    async run(_batch, line) {
      ran.push(line.customId);
      running++;
      most = Math.max(most, running);
      await new Promise<void>((resolve) => waiting.push(resolve));
      running--;
      const { ok, stop } = outcome(line);
      return { result: { ok, text: line.customId }, ...(stop ? { stop } : {}) };
    },
    notRun: (_batch, line) => ({ ok: false, text: `${line.customId}:not-run` }),
  };
  /** Lets every waiting line go, until no line is left waiting. */
  const drain = async () => {
    for (let i = 0; i < 1_000; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      const now = waiting.splice(0);
      if (now.length === 0 && running === 0) return;
      for (const go of now) go();
    }
  };
  return { executor, ran, most: () => most, waiting, drain };
}

describe("the batch runner", () => {
  it("runs every line once, in file order, never more than `concurrency` at once", async () => {
    const mem = memoryStore(250);
    const held = heldExecutor();
    const runner = createBatchRunner({ store: mem.store, executor: held.executor, concurrency: 3, logger });
    runner.add("b");
    const settled = runner.settled("b");
    await held.drain();
    await settled;
    expect(mem.status()).toBe("completed");
    expect(held.ran).toEqual(Array.from({ length: 250 }, (_, i) => `c${i}`));
    expect(held.most()).toBe(3);
    expect(mem.results.size).toBe(250);
  });

  it("resumes without running a line that already has a result", async () => {
    const mem = memoryStore(10, ["c0", "c1", "c4"]);
    const held = heldExecutor();
    const runner = createBatchRunner({ store: mem.store, executor: held.executor, concurrency: 2, logger });
    expect(await runner.resume()).toBe(1);
    const settled = runner.settled("b");
    await held.drain();
    await settled;
    expect(held.ran).toEqual(["c2", "c3", "c5", "c6", "c7", "c8", "c9"]);
    expect(mem.results.get("c0")?.text).toBe("c0:before");
  });

  it("stops at a budget refusal: running lines finish, the rest are failed as not run", async () => {
    const mem = memoryStore(20);
    const held = heldExecutor((line) => (line.customId === "c3" ? { ok: false, stop: true } : { ok: true }));
    const runner = createBatchRunner({ store: mem.store, executor: held.executor, concurrency: 2, logger });
    runner.add("b");
    const settled = runner.settled("b");
    await held.drain();
    await settled;
    expect(mem.status()).toBe("completed");
    expect(mem.results.size).toBe(20);
    const notRun = [...mem.results.entries()].filter(([, r]) => r.text.endsWith(":not-run")).map(([id]) => id);
    expect(notRun.length).toBeGreaterThan(0);
    for (const id of notRun) expect(held.ran).not.toContain(id);
    expect(held.ran.length + notRun.length).toBe(20);
  });

  it("on cancel takes no new line and ends cancelled once the running ones finish", async () => {
    const mem = memoryStore(20);
    const held = heldExecutor();
    const runner = createBatchRunner({ store: mem.store, executor: held.executor, concurrency: 2, logger });
    runner.add("b");
    const settled = runner.settled("b");
    while (held.waiting.length < 2) await new Promise((resolve) => setImmediate(resolve));
    mem.cancelling();
    runner.cancel("b");
    await held.drain();
    await settled;
    expect(mem.status()).toBe("cancelled");
    expect(held.ran).toEqual(["c0", "c1"]);
    expect([...mem.results.keys()]).toEqual(["c0", "c1"]);
  });

  it("on close aborts running lines and writes none of their results", async () => {
    const mem = memoryStore(5);
    const executor: LineExecutor = {
      run: (_batch, line, signal) => new Promise((resolve) => signal.addEventListener("abort", () => resolve({ result: { ok: false, text: line.customId } }))),
      notRun: (_batch, line) => ({ ok: false, text: line.customId }),
    };
    const runner = createBatchRunner({ store: mem.store, executor, concurrency: 2, logger });
    runner.add("b");
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
    await runner.close();
    expect(mem.results.size).toBe(0);
    expect(mem.status()).toBe("in_progress");
  });
});

describe("a batch file", () => {
  const settings = { maxLines: 3, maxLineBytes: 300 };
  const limits = { maxJsonDepth: 32, maxRequestElements: 10_000 };
  const line = (customId: string, extra: object = {}) => JSON.stringify({ custom_id: customId, method: "POST", url: "/v1/embeddings", body: { model: "m", input: "x" }, ...extra });

  it("reads lines, skipping blank ones and numbering them as an editor does", () => {
    const lines = readBatchFile(`${line("a")}\r\n\n${line("b")}\n`, settings, limits);
    expect(lines.map((l) => [l.line, l.customId, l.url])).toEqual([
      [1, "a", "/v1/embeddings"],
      [3, "b", "/v1/embeddings"],
    ]);
  });

  const refused: Array<[string, string, string]> = [
    ["a duplicate custom_id", `${line("a")}\n${line("a")}`, 'file: line 2: custom_id "a" appears more than once'],
    ["another method", line("a", { method: "GET" }), "file: line 1: method: must be POST"],
    ["a url batches do not run", line("a", { url: "/v1/responses" }), 'file: line 1: url: "/v1/responses" is not served in batches'],
    ["a body that is not an object", line("a", { body: [1] }), "file: line 1: body: must be a JSON object"],
    ["an unknown field", line("a", { extra: 1 }), 'file: line 1: unknown field "extra"'],
    ["a line that is not JSON", "{nope", "file: line 1: "],
    ["a line over maxLineBytes", line("a", { body: { input: "x".repeat(400) } }), "file: line 1: longer than 300 bytes"],
    ["more lines than maxLines", [line("a"), line("b"), line("c"), line("d")].join("\n"), "file: more than 3 requests"],
    ["no lines", "\n\n", "file: no requests in it"],
  ];
  for (const [name, content, message] of refused) {
    it(`refuses ${name}`, () => {
      expect(() => readBatchFile(content, settings, limits)).toThrow(expect.objectContaining({ code: "invalid_request", message: expect.stringContaining(message) }));
    });
  }
});
