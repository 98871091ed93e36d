import { once } from "node:events";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHUNK_CHARS } from "../src/batch/batch-store.js";
import type { UploadCheckConfig } from "../src/batch/upload-check.js";
import { MAX_UPLOAD_WORKERS, openUploadChecker, uploadWorkerEvents, uploadWorkersLive } from "../src/batch/upload-workers.js";
import { GatewayError } from "../src/core/errors.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { chatLine, rawUpload } from "./helpers/raw-upload.js";

/**
 * Issue 47: a batch upload is checked in a worker thread of its own
 * (batch/upload-workers.ts). The worker's failures reach the upload as
 * clear errors and never leave a thread behind: one that does not answer
 * within its call's deadline, or dies, is terminated; a client that goes
 * away mid-upload ends its worker and its half-stored file. Over a real
 * socket where a gateway is involved (in process, so that the test sees
 * the process's count of upload workers).
 */
const KEY = "sk-test-upload-worker-8d2f4b6a0c1e3579";
const MiB = 1024 * 1024;
const config: UploadCheckConfig = { settings: { maxLines: 1_000, maxLineBytes: 4_096, maxFileBytes: 4 * MiB }, limits: { maxRequestElements: 10_000, maxJsonDepth: 32 }, chunkChars: CHUNK_CHARS };
const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url);
const lines = (from: number, count: number, width = 200) => Array.from({ length: count }, (_, i) => chatLine(from + i, width)).join("");

const rejection = (work: Promise<unknown>) =>
  work.then(
    () => undefined,
    (e: unknown) => e as GatewayError,
  );

describe("an upload's worker thread", () => {
  it("checks the bytes as they come, split anywhere, and hands back line-aligned pieces; the worker is gone once closed", async () => {
    const text = lines(0, 40);
    const checker = openUploadChecker(config);
    expect(uploadWorkersLive()).toBe(1);
    const pieces: string[] = [];
    // Split mid-line and mid-character of nothing in particular: 7-byte reads.
    const bytes = Buffer.from(text);
    for (let at = 0; at < bytes.length; at += 7) pieces.push(...(await checker.push(bytes.subarray(at, at + 7))));
    pieces.push(...(await checker.end()));
    expect(pieces.join("")).toBe(text);
    const closed = once(uploadWorkerEvents, "close");
    await checker.close();
    await closed;
    expect(uploadWorkersLive()).toBe(0);
  });

  it("refuses a bad line naming it, with the file's own error", async () => {
    const checker = openUploadChecker(config);
    const error = await rejection(checker.push(Buffer.from(`${lines(0, 2)}{"custom_id": "x", "method": "GET"}\n`)));
    await checker.close();
    expect(error).toBeInstanceOf(GatewayError);
    expect(error?.code).toBe("invalid_request");
    expect(error?.message).toMatch(/^file: line 3: /);
  });

  it("terminates a worker that misses its call's deadline, and says so", async () => {
    const checker = openUploadChecker(config, { entry: fixture("upload-worker-hangs.mjs"), deadlineMs: 300 });
    const closed = once(uploadWorkerEvents, "close");
    const error = await rejection(checker.push(Buffer.from(lines(0, 1))));
    expect(error?.code).toBe("internal");
    expect(error?.message).toMatch(/did not answer within 300 ms.*nothing of it was stored/);
    // Terminated without being asked to: the slot is free again.
    await closed;
    expect(uploadWorkersLive()).toBe(0);
    // Every later call fails the same way, at once.
    expect((await rejection(checker.end()))?.message).toBe(error?.message);
    await checker.close();
  });

  it("runs at most MAX_UPLOAD_WORKERS at once: one more is refused to retry, and taken once one ends", async () => {
    const checkers = Array.from({ length: MAX_UPLOAD_WORKERS }, () => openUploadChecker(config));
    let refused: unknown;
    try {
      openUploadChecker(config);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(GatewayError);
    expect((refused as GatewayError).code).toBe("overloaded");
    expect((refused as GatewayError).retryAfterMs).toBeGreaterThan(0);
    expect(uploadWorkersLive()).toBe(MAX_UPLOAD_WORKERS);
    await checkers.pop()?.close();
    const another = openUploadChecker(config);
    expect(await another.push(Buffer.from(lines(0, 1)))).toEqual([]);
    await Promise.all([...checkers, another].map((c) => c.close()));
    expect(uploadWorkersLive()).toBe(0);
  });

  it("turns a worker that dies into a clear error and frees its slot", async () => {
    const checker = openUploadChecker(config, { entry: fixture("upload-worker-dies.mjs") });
    const closed = once(uploadWorkerEvents, "close");
    const error = await rejection(checker.push(Buffer.from(lines(0, 1))));
    expect(error?.code).toBe("internal");
    expect(error?.message).toMatch(/its worker stopped/);
    await closed;
    expect(uploadWorkersLive()).toBe(0);
  });
});

describe("uploads through the gateway", () => {
  let db: OwnDatabase;
  let h: Harness;

  beforeAll(async () => {
    db = await ownDatabase();
    h = await startHarness({
      routing: (sim) => ({ providers: { oa: { kind: "openai", baseUrl: sim.openAiBaseUrl } }, models: { chat: { provider: "oa", model: "sim-1?tokens=2" } } }),
      env: { UPLOAD_KEY: KEY },
      auth: { keys: [{ name: "uploader", keyEnv: "UPLOAD_KEY" }] },
      store: { postgres: { url: db.url, poolSize: 4 } },
      batch: { maxFileBytes: 4 * MiB },
    });
  });
  afterAll(async () => {
    await h?.close();
    await db?.drop();
  });

  const unfinishedFiles = async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      return (await client.query("SELECT id FROM sluice_batch_files WHERE complete = false")).rows;
    } finally {
      await client.end();
    }
  };

  it("ends the worker and the half-stored file of a client that goes away mid-upload; the next upload is served", async () => {
    const opened = once(uploadWorkerEvents, "open");
    const upload = rawUpload(h.url, KEY, 3 * MiB);
    await opened;
    expect(uploadWorkersLive()).toBe(1);
    // More than a stored piece's worth, so that part of the file is in the database when the client goes.
    const first = Buffer.from(lines(0, 6_000, 250));
    await upload.write(first.subarray(0, Math.min(first.length, Math.floor(1.5 * MiB))));
    const closed = once(uploadWorkerEvents, "close");
    upload.req.destroy();
    await closed;
    expect(uploadWorkersLive()).toBe(0);
    expect(await unfinishedFiles()).toEqual([]);

    const text = lines(0, 100);
    const next = rawUpload(h.url, KEY, Buffer.byteLength(text));
    await next.write(text);
    next.end();
    const answer = await next.answered;
    expect(answer.status, answer.body).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ object: "file", bytes: Buffer.byteLength(text) });
    expect(uploadWorkersLive()).toBe(0);
  });

  it("refuses a file of undeclared length with 413 as it passes batch.maxFileBytes, and one with a bad line with 400 naming it", async () => {
    const big = rawUpload(h.url, KEY, undefined);
    await big.write(lines(0, 20_000, 250)).catch(() => undefined);
    big.end();
    const tooBig = await big.answered;
    expect(tooBig.status, tooBig.body).toBe(413);
    expect(tooBig.body).toMatch(/batch\.maxFileBytes/);

    const bad = rawUpload(h.url, KEY, undefined);
    await bad.write(`${lines(0, 500)}not json\n${lines(500, 10)}`).catch(() => undefined);
    bad.end();
    const refused = await bad.answered;
    expect(refused.status, refused.body).toBe(400);
    expect(refused.body).toMatch(/file: line 501: /);
    expect(await unfinishedFiles()).toEqual([]);
    expect(uploadWorkersLive()).toBe(0);
  });
});
