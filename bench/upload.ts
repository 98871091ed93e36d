import { request } from "node:http";
import pg from "pg";
import type { Proc } from "./procs.js";
import { table } from "./report.js";
import { round } from "./stats.js";

/**
 * A batch-file upload beside the gateway's streams (issue #47): one
 * JSONL file of `megabytes` MiB (lines of about 2 KiB, as the hostile
 * upload of the issue: 100 MiB, 48,000 lines) streamed to `POST /v1/files`
 * on a gateway of its own, with a PostgreSQL server as its store. The
 * gateway's event-loop delay window (`/debug/runtime?reset=1`) starts as
 * the upload does and is read once it is answered: its p99 and max are the
 * upload's cost to every stream on the gateway. RSS is sampled every
 * 100 ms (a benchmark may poll) against its value just before the upload.
 */
export interface UploadDeps {
  readonly startGateway: (config: Record<string, unknown>) => Promise<{ proc: Proc; url: string }>;
  readonly log: (line: string) => void;
}

export interface UploadSizes {
  readonly megabytes: number;
}

const POSTGRES_URL = process.env.SLUICE_BENCH_POSTGRES_URL ?? "postgres://postgres:postgres@127.0.0.1:5432/postgres";
const MiB = 1024 * 1024;
const LINE_BYTES = 2_184;
const PIECE_LINES = 64;

interface Runtime {
  readonly rssBytes: number;
  readonly eventLoopDelayMs: { readonly p50: number; readonly p99: number; readonly max: number };
}

const runtime = async (url: string, reset = false): Promise<Runtime> => (await (await fetch(`${url}/debug/runtime${reset ? "?reset=1" : ""}`)).json()) as Runtime;

function fileLine(i: number): string {
  const head = JSON.stringify({ custom_id: `r-${String(i).padStart(6, "0")}`, method: "POST", url: "/v1/chat/completions", body: { model: "bench", messages: [{ role: "user", content: "" }] } });
  return `${head.replace('"content":""', `"content":"${"x".repeat(LINE_BYTES - head.length - 1)}"`)}\n`;
}

/** Streams the file to the gateway as fast as it takes it (each piece written once the last drained); resolves with the answer. */
function upload(url: string, lines: number): Promise<{ status: number; body: string }> {
  const boundary = "----sluice-bench-upload";
  const head = `--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="bench.jsonl"\r\ncontent-type: application/jsonl\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  const target = new URL(`${url}/v1/files`);
  const req = request({
    host: target.hostname,
    port: target.port,
    path: target.pathname,
    method: "POST",
    headers: { "content-type": `multipart/form-data; boundary=${boundary}`, "content-length": String(Buffer.byteLength(head) + lines * LINE_BYTES + Buffer.byteLength(tail)) },
  });
  const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on("response", (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
  });
  const write = (piece: string) => (req.write(piece) ? Promise.resolve() : new Promise<void>((resolve) => req.once("drain", resolve)));
  void (async () => {
    await write(head);
    for (let i = 0; i < lines; i += PIECE_LINES) {
      let piece = "";
      for (let j = i; j < Math.min(lines, i + PIECE_LINES); j++) piece += fileLine(j);
      await write(piece);
    }
    req.end(tail);
  })().catch((error: unknown) => req.destroy(error as Error));
  return answered;
}

export async function uploadScenario(sizes: UploadSizes, deps: UploadDeps) {
  const server = new pg.Client({ connectionString: POSTGRES_URL });
  await server.connect();
  const name = `sluice_bench_upload_${process.pid}`;
  await server.query(`DROP DATABASE IF EXISTS ${name}`);
  await server.query(`CREATE DATABASE ${name}`);
  const dbUrl = new URL(POSTGRES_URL);
  dbUrl.pathname = `/${name}`;
  const lines = Math.floor((sizes.megabytes * MiB) / LINE_BYTES);
  const gw = await deps.startGateway({ server: { debugEndpoints: true, requestTimeoutMs: 600_000 }, store: { postgres: { url: dbUrl.toString(), poolSize: 4 } }, batch: { maxFileBytes: 200 * MiB, maxLines: 50_000 } });
  try {
    // A small upload first opens the database and warms the path.
    const warm = await upload(gw.url, 10);
    if (warm.status !== 200) throw new Error(`warm-up upload: ${warm.status} ${warm.body}`);
    const before = await runtime(gw.url, true);
    let peakRss = before.rssBytes;
    let done = false;
    const sampling = (async () => {
      while (!done) {
        peakRss = Math.max(peakRss, (await runtime(gw.url)).rssBytes);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const started = performance.now();
    const answer = await upload(gw.url, lines);
    const seconds = (performance.now() - started) / 1000;
    done = true;
    await sampling;
    const after = await runtime(gw.url);
    if (answer.status !== 200) throw new Error(`upload: ${answer.status} ${answer.body}`);
    const result = {
      megabytes: round((lines * LINE_BYTES) / MiB, 1),
      lines,
      seconds: round(seconds, 2),
      eventLoopDelayMs: after.eventLoopDelayMs,
      rssGrowthMiB: round((Math.max(peakRss, after.rssBytes) - before.rssBytes) / MiB, 1),
      rssBeforeMiB: round(before.rssBytes / MiB, 1),
    };
    deps.log(
      `upload: ${result.megabytes} MiB (${lines} lines) in ${result.seconds} s; gateway event-loop delay p99 ${result.eventLoopDelayMs.p99} ms, max ${result.eventLoopDelayMs.max} ms; RSS +${result.rssGrowthMiB} MiB (from ${result.rssBeforeMiB} MiB)`,
    );
    return result;
  } finally {
    await gw.proc.stop();
    await server.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await server.end();
  }
}

export type UploadResult = Awaited<ReturnType<typeof uploadScenario>>;

export function uploadSection(r: UploadResult): string {
  return [
    `## 9f. A ${r.megabytes} MiB batch-file upload (${r.lines} lines; issue #47): the gateway's event-loop delay and RSS growth while it is read, checked and stored`,
    table(["upload s", "event-loop delay p50 ms", "p99 ms", "max ms", "RSS growth MiB"], [[String(r.seconds), String(r.eventLoopDelayMs.p50), String(r.eventLoopDelayMs.p99), String(r.eventLoopDelayMs.max), String(r.rssGrowthMiB)]]),
    "",
  ].join("\n");
}
