import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { simulatedTokens } from "../src/simulator/text.js";
import { type GatewayProcess, startGatewayProcess } from "./helpers/gateway-process.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";

/**
 * Issue 43, item 3: a 100 MiB, 48,000-line batch file uploaded by a key
 * froze the gateway (event loop 34 s, RSS +1.1 GiB) and creating its batch
 * froze it again. The gateway (its own process, a PostgreSQL server) now
 * checks and stores the file as it streams in, in bounded pieces between
 * turns of its event loop. Asserted on delivery, not on time: a stream
 * running at the same time receives every token, in order, interleaved
 * with the upload's progress; and never a backlog of them at once (what a
 * stalled gateway hands over when it wakes: the upstream kept writing
 * into the socket meanwhile). The same while its batch is made from it.
 */
const KEY = "sk-test-upload-stream-5b7d9f1a3c2e4680";
const MiB = 1024 * 1024;
const LINES = 48_000;
const FILE_BYTES = 100 * MiB;
/** Tokens of the concurrent stream, one every 2 ms (the simulator's pace): far more than the upload needs. */
const TOKENS = 200_000;
const SEED = 4242;
/**
 * Tokens that may arrive in one batch of I/O at the client. A healthy
 * gateway forwards each as it comes (a few per batch; a few hundred if this
 * machine starves it for a second); one that stalls hands over everything
 * the upstream wrote meanwhile: one token per 2 ms of stall.
 */
const MAX_TOKENS_AT_ONCE = 1_000;

let sim: Simulator;
let db: OwnDatabase;
let gw: GatewayProcess;

beforeAll(async () => {
  sim = await startSimulator();
  db = await ownDatabase();
  gw = await startGatewayProcess(
    {
      log: { level: "info" },
      server: { requestTimeoutMs: 600_000 },
      providers: { sim: { kind: "openai", baseUrl: sim.openAiBaseUrl, breaker: { failures: 10_000 } } },
      models: { chat: { provider: "sim", model: "sim-1" } },
      auth: { keys: [{ name: "uploader", keyEnv: "UPLOAD_KEY" }] },
      store: { postgres: { url: db.url, poolSize: 4 } },
      batch: { maxFileBytes: 128 * MiB },
    },
    { env: { ...process.env, UPLOAD_KEY: KEY } },
  );
});
afterAll(async () => {
  await gw?.stop();
  await db?.drop();
  await sim?.close();
});

/** Line i of the file: a chat request padded so that 48,000 lines make 100 MiB. */
function fileLine(i: number, width: number): string {
  const head = JSON.stringify({ custom_id: `r-${String(i).padStart(6, "0")}`, method: "POST", url: "/v1/chat/completions", body: { model: "chat", messages: [{ role: "user", content: "" }] } });
  return `${head.replace('"content":""', `"content":"${"x".repeat(width - head.length - 1)}"`)}\n`;
}

type Logged = { readonly kind: "delta"; readonly index: number; readonly batch: number } | { readonly kind: "upload"; readonly bytes: number };

describe("a 100 MiB batch file upload", () => {
  it("leaves a concurrent stream receiving every token in order, interleaved with the upload, never a stalled backlog at once", async () => {
    const log: Logged[] = [];
    const expected = simulatedTokens(SEED, TOKENS);
    const received: string[] = [];
    let batch = 0;
    let batchOpen = false;
    let streamDone = false;
    let started: (() => void) | undefined;
    let tokenArrived: (() => void) | undefined;
    /** The stream's next token, or a failure naming the stall: a gateway busy with the upload stops the stream's tokens. */
    const nextToken = () =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the stream received no token for 30 s during the upload (${received.length} so far)`)), 30_000);
        tokenArrived = () => {
          clearTimeout(timer);
          tokenArrived = undefined;
          resolve();
        };
      });

    // The concurrent stream: Chat Completions over its own connection, read as it arrives.
    const url = new URL(gw.url);
    const streamReq = request({ host: url.hostname, port: url.port, path: "/v1/chat/completions", method: "POST", headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" } });
    const streamEnded = new Promise<void>((resolve) => {
      streamReq.on("response", (res) => {
        expect(res.statusCode).toBe(200);
        let pending = "";
        res.setEncoding("utf8");
        res.on("data", (text: string) => {
          // Everything that arrives before the next turn of this process's loop is one batch of I/O.
          if (!batchOpen) {
            batchOpen = true;
            batch++;
            setImmediate(() => (batchOpen = false));
          }
          pending += text;
          const events = pending.split("\n\n");
          pending = events.pop()!;
          for (const event of events) {
            // Heartbeats (`: keepalive`) are comments, not tokens.
            const data = event
              .split("\n")
              .find((l) => l.startsWith("data: "))
              ?.slice("data: ".length);
            if (data === undefined || data === "[DONE]") continue;
            const content = (JSON.parse(data) as { choices?: Array<{ delta?: { content?: string } }> }).choices?.[0]?.delta?.content;
            if (content) {
              log.push({ kind: "delta", index: received.length, batch });
              received.push(content);
              if (received.length === 20) started?.();
              tokenArrived?.();
            }
          }
        });
        res.on("close", () => {
          streamDone = true;
          resolve();
        });
      });
      streamReq.on("error", () => resolve());
    });
    streamReq.end(JSON.stringify({ model: "chat", stream: true, messages: [{ role: "user", content: `#sim tokens=${TOKENS} delay_ms=2 seed=${SEED}\nhello` }] }));
    // The stream runs before the upload starts.
    await new Promise<void>((resolve) => (started = resolve));

    // The upload: one multipart body written piece by piece as the gateway takes it.
    const boundary = "----sluice-upload-test";
    const width = Math.floor(FILE_BYTES / LINES);
    const head = `--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.jsonl"\r\ncontent-type: application/jsonl\r\n\r\n`;
    const tail = `\r\n--${boundary}--\r\n`;
    const fileBytes = LINES * width;
    const upload = request({
      host: url.hostname,
      port: url.port,
      path: "/v1/files",
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": `multipart/form-data; boundary=${boundary}`, "content-length": String(Buffer.byteLength(head) + fileBytes + Buffer.byteLength(tail)) },
    });
    const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
      upload.on("response", (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      upload.on("error", reject);
    });
    const write = async (piece: string | Buffer) => {
      const accepted = new Promise<void>((resolve, reject) => upload.write(piece, (error) => (error ? reject(error) : resolve())));
      await accepted;
    };
    const startRss = gw.rss();
    let peakRss = startRss;
    await write(head);
    let sent = 0;
    const PIECE_LINES = 256;
    for (let i = 0; i < LINES; i += PIECE_LINES) {
      let piece = "";
      for (let j = i; j < Math.min(LINES, i + PIECE_LINES); j++) piece += fileLine(j, width);
      await write(piece);
      const tenth = Math.floor((sent / fileBytes) * 10);
      sent += Buffer.byteLength(piece);
      log.push({ kind: "upload", bytes: sent });
      peakRss = Math.max(peakRss, gw.rss());
      // On into the file, and into each next tenth of it, only once the stream has had a token there: how fast this
      // process writes is not what is measured, whether the gateway keeps streaming while it reads is.
      if ((i === 0 || Math.floor((sent / fileBytes) * 10) > tenth) && sent < fileBytes) await nextToken();
    }
    upload.end(tail);
    const result = await answered;
    expect(result.status, result.body).toBe(200);
    const fileId = (JSON.parse(result.body) as { id: string }).id;

    // Creating its batch reads the 48,000 lines back and checks each as a chat request: the stream goes on meanwhile.
    const tokensBeforeCreate = received.length;
    const api = (path: string, body: object) =>
      fetch(`${gw.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" }, body: JSON.stringify(body) }).then(async (r) => ({
        status: r.status,
        body: (await r.json()) as Record<string, unknown>,
      }));
    const created = await api("/v1/batches", { input_file_id: fileId, endpoint: "/v1/chat/completions", completion_window: "24h" });
    const tokensDuringCreate = received.length - tokensBeforeCreate;
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({ request_counts: { total: LINES } });
    expect((await api(`/v1/batches/${String(created.body.id)}/cancel`, {})).status).toBe(200);
    streamReq.destroy();
    await streamEnded;

    expect(JSON.parse(result.body)).toMatchObject({ object: "file", bytes: fileBytes, purpose: "batch", filename: "big.jsonl" });
    expect(streamDone).toBe(true);
    // Every token, in order, none twice or missing: the stream was served throughout.
    expect(received.length).toBeGreaterThan(100);
    expect(received).toEqual(expected.slice(0, received.length));
    // Interleaved: in every tenth of the upload's bytes the stream received tokens.
    const tenths = new Set<number>();
    let uploaded = 0;
    for (const entry of log) {
      if (entry.kind === "upload") uploaded = entry.bytes;
      else if (uploaded > 0 && uploaded < fileBytes) tenths.add(Math.floor((uploaded / fileBytes) * 10));
    }
    expect([...tenths].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Never a backlog at once: no batch of I/O carried more than a stall's worth of tokens.
    const perBatch = new Map<number, number>();
    for (const entry of log) if (entry.kind === "delta") perBatch.set(entry.batch, (perBatch.get(entry.batch) ?? 0) + 1);
    const most = Math.max(...perBatch.values());
    expect(tokensDuringCreate).toBeGreaterThan(0);
    console.log(
      `upload: ${received.length} tokens during a ${(fileBytes / MiB).toFixed(1)} MiB upload and its batch (${tokensDuringCreate} while the batch was made); at most ${most} in one batch of I/O; gateway RSS ${(startRss / MiB).toFixed(0)} MiB, at most ${(peakRss / MiB).toFixed(0)} MiB during the upload`,
    );
    expect(most).toBeLessThanOrEqual(MAX_TOKENS_AT_ONCE);
    // The file is never whole in the gateway's heap (reading it whole once took RSS up by 1.1 GiB).
    expect(peakRss - startRss).toBeLessThan(300 * MiB);
  }, 600_000);
});
