import { createHash } from "node:crypto";
import OpenAI, { toFile } from "openai";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { rawUpload } from "./helpers/raw-upload.js";

/**
 * Batch files stored as they stream in (issue 43, item 3): in chunks,
 * read back byte for byte and a chunk at a time when a batch is made; and
 * each key's uploads bounded, in files stored (batch.maxFilesPerKey) and in
 * bytes per UTC day (batch.maxUploadBytesPerDay), a refused upload leaving
 * nothing stored. On a PostgreSQL server.
 */
const KEYS = { a: "sk-test-upload-a-2c4e6a8b0d1f3957", b: "sk-test-upload-b-7e9a1c3b5d0f2468", c: "sk-test-upload-c-1b3d5f7a9c0e2468" };
const MiB = 1024 * 1024;

let db: OwnDatabase;
let h: Harness;

beforeAll(async () => {
  db = await ownDatabase();
  h = await startHarness({
    routing: (sim) => ({
      providers: { oa: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: { chat: { provider: "oa", model: "sim-1?tokens=2" } },
    }),
    env: { KEY_A: KEYS.a, KEY_B: KEYS.b, KEY_C: KEYS.c },
    auth: {
      keys: [
        { name: "a", keyEnv: "KEY_A" },
        { name: "b", keyEnv: "KEY_B" },
        { name: "c", keyEnv: "KEY_C" },
      ],
    },
    store: { postgres: { url: db.url, poolSize: 4 } },
    // Key c's day ends at 3 MiB; every key stores 3 files at most.
    batch: { maxFileBytes: 8 * MiB, maxFilesPerKey: 3, maxUploadBytesPerDay: 3 * MiB },
  });
});
afterAll(async () => {
  await h?.close();
  await db?.drop();
});

const sdk = (key: string) => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: key, maxRetries: 0 });

/** `count` chat lines of about `width` bytes each, with \r\n and blank lines among them, as a client may write them. */
function jsonl(count: number, width = 200, prefix = "r"): string {
  let text = "";
  for (let i = 0; i < count; i++) {
    const head = JSON.stringify({ custom_id: `${prefix}-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "chat", messages: [{ role: "user", content: "é🙂" }] } });
    text += head.replace('"content":"é🙂"', `"content":"é🙂${"x".repeat(Math.max(0, width - head.length))}"`) + (i % 7 === 0 ? "\r\n" : "\n");
    if (i % 500 === 0) text += "\n";
  }
  return text;
}

async function query<T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

const status = (work: Promise<unknown>) =>
  work.then(
    () => 200,
    (e: { status?: number }) => e.status,
  );

describe("batch files stored in chunks", () => {
  it("reads a 2 MiB file back byte for byte (a BOM, \\r\\n and no final newline kept), from its chunks, and makes its batch from them", async () => {
    const content = `\uFEFF${jsonl(12_000, 200).trimEnd()}`;
    const bytes = Buffer.from(content);
    expect(bytes.length).toBeGreaterThan(2 * MiB);
    const file = await sdk(KEYS.a).files.create({ file: await toFile(bytes, "two.jsonl"), purpose: "batch" });
    expect(file).toMatchObject({ bytes: bytes.length, filename: "two.jsonl" });
    const chunks = await query<{ n: number; most: number }>("SELECT count(*)::int AS n, max(length(content))::int AS most FROM sluice_batch_file_chunks WHERE file_id = $1", [file.id]);
    // Stored in pieces of about a MiB, never as one value.
    expect(chunks[0]!.n).toBeGreaterThanOrEqual(2);
    expect(chunks[0]!.most).toBeLessThan(1.1 * MiB);
    const back = Buffer.from(await (await sdk(KEYS.a).files.content(file.id)).arrayBuffer());
    expect(createHash("sha256").update(back).digest("hex")).toBe(createHash("sha256").update(bytes).digest("hex"));
    const batch = await sdk(KEYS.a).batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" });
    expect(batch.request_counts).toMatchObject({ total: 12_000 });
    await sdk(KEYS.a).batches.cancel(batch.id);
    const lines = await query<{ n: number; first: number; last: number }>("SELECT count(*)::int AS n, min(line) AS first, max(line) AS last FROM sluice_batch_lines WHERE batch_id = $1", [batch.id]);
    // Numbered as an editor shows the file: the blank lines count.
    expect(lines[0]).toEqual({ n: 12_000, first: 1, last: 12_000 + 24 });
    await h.sluice.batches.settled(batch.id);
  }, 120_000);

  it("refuses a file at its first bad line and keeps nothing of it", async () => {
    const bad = `${jsonl(3_000, 500)}{"custom_id": "broken"\n${jsonl(10, 100, "after")}`;
    const error = (await sdk(KEYS.b)
      .files.create({ file: await toFile(Buffer.from(bad), "bad.jsonl"), purpose: "batch" })
      .catch((e: unknown) => e)) as { status: number; message: string };
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/file: line 3007: /);
    expect(await query("SELECT id FROM sluice_batch_files WHERE filename = 'bad.jsonl' OR (complete = false)")).toEqual([]);
  });

  it("stores at most batch.maxFilesPerKey files per key; deleting one makes room, and other keys are not counted", async () => {
    const b = sdk(KEYS.b);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await b.files.create({ file: await toFile(Buffer.from(jsonl(2)), `f${i}.jsonl`), purpose: "batch" })).id);
    const refused = (await b.files.create({ file: await toFile(Buffer.from(jsonl(2)), "f3.jsonl"), purpose: "batch" }).catch((e: unknown) => e)) as { status: number; message: string };
    expect(refused.status).toBe(429);
    expect(refused.message).toMatch(/batch\.maxFilesPerKey/);
    // Another key's files are its own: a's files do not fill b's room, nor can b delete them.
    expect(await status(sdk(KEYS.a).files.delete(ids[0]!))).toBe(404);
    expect(await b.files.delete(ids[0]!)).toMatchObject({ id: ids[0], deleted: true });
    expect(await status(b.files.retrieve(ids[0]!))).toBe(404);
    expect(await status(b.files.create({ file: await toFile(Buffer.from(jsonl(2)), "f4.jsonl"), purpose: "batch" }))).toBe(200);
  });

  it("takes at most batch.maxUploadBytesPerDay from a key in a UTC day: refused before a byte is read when the declared length passes it, else as it is crossed, and discarded", async () => {
    const c = sdk(KEYS.c);
    const two = Buffer.from(jsonl(9_000, 240));
    expect(two.length).toBeGreaterThan(2 * MiB);
    expect(await status(c.files.create({ file: await toFile(two, "first.jsonl"), purpose: "batch" }))).toBe(200);
    // Declared: refused at once, nothing of it read or counted.
    const refused = (await c.files.create({ file: await toFile(two, "second.jsonl"), purpose: "batch" }).catch((e: unknown) => e)) as { status: number; message: string };
    expect(refused.status).toBe(429);
    expect(refused.message).toMatch(/would take this key past .*batch\.maxUploadBytesPerDay/);
    expect(await query("SELECT id FROM sluice_batch_files WHERE filename = 'second.jsonl' OR complete = false")).toEqual([]);
    expect(await status(c.files.create({ file: await toFile(Buffer.from(jsonl(1)), "small.jsonl"), purpose: "batch" }))).toBe(200);
    // Not declared (chunked): refused as the day's bound is crossed, what was stored of it discarded, and later ones refused at once.
    const chunked = rawUpload(h.url, KEYS.c, undefined);
    // The gateway may answer and close before the file is all sent: a write refused then is expected.
    await chunked.write(two).catch(() => undefined);
    chunked.end();
    const crossed = await chunked.answered;
    expect(crossed.status, crossed.body).toBe(429);
    expect(crossed.body).toMatch(/uploaded more than .*batch\.maxUploadBytesPerDay/);
    expect(await query("SELECT id FROM sluice_batch_files WHERE complete = false")).toEqual([]);
    expect(await status(c.files.create({ file: await toFile(Buffer.from(jsonl(1)), "late.jsonl"), purpose: "batch" }))).toBe(429);
    // Another key's day is its own.
    expect(await status(sdk(KEYS.a).files.create({ file: await toFile(Buffer.from(jsonl(1)), "a.jsonl"), purpose: "batch" }))).toBe(200);
  });
});
