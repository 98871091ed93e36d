import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { simulatedTokens } from "../src/simulator/text.js";
import { type GatewayProcess, startGatewayProcess } from "./helpers/gateway-process.js";
import { type OwnDatabase, ownDatabase } from "./helpers/postgres.js";
import { chatLine, rawUpload } from "./helpers/raw-upload.js";

/**
 * Issue 47: a 100 MiB batch upload, checked in a worker thread, leaves
 * the gateway's streams flowing. Asserted on delivery, never on time: the
 * uploader sends half the file, a streaming call starts and delivers its
 * first delta, the uploader sends all but the last piece, and holds that
 * back until the stream has delivered every delta and its end. So the
 * whole stream was served while the upload was open, mid-file, and the
 * upload then completes with every byte. A gateway process of its own,
 * with a PostgreSQL server as the store, as in production.
 */
const KEY = "sk-test-upload-delivery-3e5a7c9b1d0f2468";
const MiB = 1024 * 1024;
const LINES = 48_000;
const WIDTH = Math.floor((100 * MiB) / LINES);
const TOKENS = 2_000;
const SEED = 4747;
const PIECE_LINES = 256;

let sim: Simulator;
let db: OwnDatabase;
let gw: GatewayProcess;

beforeAll(async () => {
  sim = await startSimulator();
  db = await ownDatabase();
  gw = await startGatewayProcess(
    {
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

/** A streaming Chat Completions call: resolves `first` at its first delta, `done` with every delta once `[DONE]` came. */
function stream(prompt: string) {
  const url = new URL(gw.url);
  const deltas: string[] = [];
  let firstDelta: () => void = () => undefined;
  const first = new Promise<void>((resolve) => (firstDelta = resolve));
  const done = new Promise<{ deltas: string[]; finished: boolean }>((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: "/v1/chat/completions", method: "POST", headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" } });
    req.on("error", reject);
    req.on("response", (res) => {
      if (res.statusCode !== 200) reject(new Error(`stream: ${res.statusCode}`));
      let pending = "";
      let finished = false;
      res.setEncoding("utf8");
      res.on("data", (text: string) => {
        pending += text;
        const events = pending.split("\n\n");
        pending = events.pop() ?? "";
        for (const event of events) {
          const data = event
            .split("\n")
            .find((l) => l.startsWith("data: "))
            ?.slice("data: ".length);
          if (data === undefined) continue;
          if (data === "[DONE]") {
            finished = true;
            continue;
          }
          const content = (JSON.parse(data) as { choices?: Array<{ delta?: { content?: string } }> }).choices?.[0]?.delta?.content;
          if (content) {
            deltas.push(content);
            if (deltas.length === 1) firstDelta();
          }
        }
      });
      res.on("end", () => resolve({ deltas, finished }));
    });
    req.end(JSON.stringify({ model: "chat", stream: true, messages: [{ role: "user", content: prompt }] }));
  });
  return { first, done };
}

describe("a 100 MiB batch upload beside a stream", () => {
  it("leaves the stream delivering every delta while the upload is open mid-file; the upload then completes", async () => {
    const upload = rawUpload(gw.url, KEY, LINES * WIDTH);
    let answeredEarly = false;
    void upload.answered.then(() => (answeredEarly = true));
    const send = async (from: number, to: number) => {
      for (let i = from; i < to; i += PIECE_LINES) {
        let piece = "";
        for (let j = i; j < Math.min(to, i + PIECE_LINES); j++) piece += chatLine(j, WIDTH);
        await upload.write(piece);
      }
    };
    await send(0, LINES / 2);
    const call = stream(`#sim tokens=${TOKENS} delay_ms=1 seed=${SEED}\nhello`);
    await call.first;
    // The rest of the file but its last line, while the stream runs.
    await send(LINES / 2, LINES - 1);
    const { deltas, finished } = await call.done;
    // Every delta, in order, and the stream's end, all while the upload was open.
    expect(deltas).toEqual(simulatedTokens(SEED, TOKENS));
    expect(finished).toBe(true);
    expect(answeredEarly).toBe(false);

    await send(LINES - 1, LINES);
    upload.end();
    const answer = await upload.answered;
    expect(answer.status, answer.body).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ object: "file", bytes: LINES * WIDTH, purpose: "batch" });
  }, 300_000);
});
