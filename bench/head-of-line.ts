import { Readable } from "node:stream";
import { request as undiciRequest } from "undici";
import type { ChatRequest } from "../src/core/chat-request.js";
import { countedInputTokens } from "../src/usage/prompt-size.js";
import type { ReadRuntime, Runtime } from "./capacity.js";
import type { LoadSpec } from "./load.js";
import { conversation } from "./needs.js";
import type { Proc } from "./procs.js";
import { table } from "./report.js";
import { epochMs, round, summary } from "./stats.js";
import type { TargetSpec } from "./targets.js";

/**
 * Head of line (issue #47): small streams beside the gateway's heavy work,
 * all at once on one gateway. The small streams (TTFT at the client) run
 * from one load-generator process for the whole round; after a baseline
 * window the heavy work starts together: one request with a long prompt
 * through PII screening and routing by need (an alias whose only window is
 * a little above the prompt's tokens, so the byte bound is passed and the
 * tokenizer runs), one batch-file upload streamed from a generator, and a
 * burst of semantic-cache misses (embedded PGlite). Each small stream is
 * sorted by when it started: before the heavy work (without) or during it
 * (with), so both sides come from the same run and the same connections.
 */

export interface HeadOfLineSizes {
  /** Small streams at once (lanes of the load generator). */
  readonly streams: number;
  /** The prompt of the long request, in tokens (o200k). */
  readonly promptTokens: number;
  /** The uploaded batch file's bytes (a little under: whole lines). */
  readonly uploadBytes: number;
  /** Semantic-cache misses in the burst, 16 at once. */
  readonly semanticMisses: number;
  /** The small streams alone before the heavy work starts. */
  readonly baselineMs: number;
  readonly rounds: number;
}

export interface HeadOfLineDeps {
  readonly startGateway: (config: Record<string, unknown>, models: Record<string, unknown>) => Promise<{ proc: Proc; url: string }>;
  readonly runtime: (url: string) => ReadRuntime;
  readonly load: <T>(spec: LoadSpec) => Promise<T>;
  readonly startLoad: <T>(spec: LoadSpec) => { readonly child: { kill(signal: NodeJS.Signals): boolean }; readonly warm: Promise<void>; readonly result: Promise<T> };
  readonly log: (line: string) => void;
}

const MiB = 1024 * 1024;
/** The small streams' and the batch lines' upstream: a few tokens, no delay of its own. */
const SMALL_MODEL = "sim-1?tokens=8";
/** Tokens kept for the long request's answer (its max_tokens): the window is set from the prompt's tokens plus this and a margin. */
const LONG_MAX_TOKENS = 16;
const WINDOW_MARGIN = 2_000;
const BOUNDARY = "sluice-bench-head-of-line";

/** The long request as the facade takes it, with some personal data for the screening to find. */
async function longRequest(tokens: number): Promise<{ body: string; tokens: number }> {
  const turns = 20;
  let charsPerTurn = Math.round((tokens * 4.4) / turns);
  let request: ChatRequest = conversation(turns, charsPerTurn);
  let counted = await countedInputTokens(request);
  for (let i = 0; i < 3 && Math.abs(counted - tokens) > tokens / 100; i++) {
    charsPerTurn = Math.round((charsPerTurn * tokens) / counted);
    request = conversation(turns, charsPerTurn);
    counted = await countedInputTokens(request);
  }
  const messages = request.messages.map((m, i) => {
    const part = m.content[0];
    const text = part?.type === "text" ? part.text : "";
    return { role: m.role, content: m.role === "user" ? `${text}\nReach me at ops-${i}@example.com or on +1 415 555 01${String(i).padStart(2, "0")}.` : text };
  });
  return { body: JSON.stringify({ model: "long", messages, stream: true, max_tokens: LONG_MAX_TOKENS }), tokens: counted };
}

/** The gateway's aliases: small streams, the semantic cache and its embedding model, and the long prompt's alias. */
function models(window: number): Record<string, unknown> {
  return {
    small: { provider: "sim", model: SMALL_MODEL },
    emb: { provider: "sim", model: "sim-embed" },
    semantic: { provider: "sim", model: SMALL_MODEL, cache: { semantic: { embeddingModel: "emb", threshold: 0.99 } } },
    long: { provider: "sim", model: `${SMALL_MODEL}&script=long`, capabilities: { contextWindow: window }, pii: { mode: "redact" } },
  };
}

/** One batch line of a fixed length (the id zero-padded), so the file's size is known before it is sent. */
function batchLine(i: number): string {
  const id = String(i).padStart(6, "0");
  const content = `Summarise ticket ${id}. ${"The customer asked about the invoice and the delivery date. ".repeat(34)}`;
  return `${JSON.stringify({ custom_id: `line-${id}`, method: "POST", url: "/v1/chat/completions", body: { model: "small", messages: [{ role: "user", content }] } })}\n`;
}

const LINES_PER_CHUNK = 64;

/** The multipart body, a chunk of lines at a time: never more than one chunk of it in memory. */
async function* multipart(lines: number): AsyncGenerator<Buffer> {
  yield Buffer.from(`--${BOUNDARY}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${BOUNDARY}\r\ncontent-disposition: form-data; name="file"; filename="head-of-line.jsonl"\r\ncontent-type: application/jsonl\r\n\r\n`);
  for (let i = 0; i < lines; i += LINES_PER_CHUNK) {
    let text = "";
    for (let j = i; j < Math.min(lines, i + LINES_PER_CHUNK); j++) text += batchLine(j);
    yield Buffer.from(text);
  }
  yield Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
}

/** Uploads a batch file of about `bytes` (whole lines), streamed; its length declared up front, as a client that knows its file's size does. */
async function upload(url: string, bytes: number): Promise<{ status: number; fileBytes: number; lines: number; ms: number }> {
  const lineBytes = Buffer.byteLength(batchLine(0));
  const lines = Math.max(1, Math.floor(bytes / lineBytes));
  let length = 0;
  for await (const chunk of multipart(Math.min(lines, 1))) length += chunk.length;
  length += (lines - 1) * lineBytes;
  const started = performance.now();
  const res = await undiciRequest(`${url}/v1/files`, {
    method: "POST",
    headers: { "content-type": `multipart/form-data; boundary=${BOUNDARY}`, "content-length": String(length) },
    body: Readable.from(multipart(lines), { objectMode: false }),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`upload: ${res.statusCode} ${text.slice(0, 300)}`);
  return { status: res.statusCode, fileBytes: lines * lineBytes, lines, ms: performance.now() - started };
}

/** The long request, its answer read to the end. */
async function long(url: string, body: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const res = await undiciRequest(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`long prompt: ${res.statusCode} ${text.slice(0, 300)}`);
  return { status: res.statusCode, ms: performance.now() - started };
}

type Loop = Pick<Runtime["eventLoopDelayMs"], "p99" | "max">;
const loopOf = (r: Runtime): Loop => ({ p99: r.eventLoopDelayMs.p99, max: r.eventLoopDelayMs.max });

/** One round: the small streams alone, then beside the heavy work, from one load-generator run. */
async function headOfLineRound(sizes: HeadOfLineSizes, deps: HeadOfLineDeps, gw: { proc: Proc; url: string }, longBody: string) {
  const runtime = deps.runtime(`${gw.url}/debug/runtime`);
  const small: TargetSpec = { kind: "sluice-grpc", url: gw.url, model: "small" };
  const semantic: TargetSpec = { kind: "sluice-grpc", url: gw.url, model: "semantic" };
  const run = deps.startLoad<{ samples: number[]; startedAt: number[]; errors: number }>({
    scenario: "ttft",
    target: small,
    concurrency: sizes.streams,
    perLane: 1_000_000,
    prompt: "A small question.",
    warmUpRounds: 3,
    untilSignal: true,
  });
  await Promise.race([run.warm, run.result]);
  await runtime({ reset: true });
  // The baseline window: the small streams alone (a benchmark's wait, not a synchronisation).
  await new Promise((resolve) => setTimeout(resolve, sizes.baselineMs));
  const without = loopOf(await runtime({ reset: true }));
  const heavyStart = epochMs();
  const rssBefore = gw.proc.rssBytes();
  let rssPeak = rssBefore;
  // A gateway that exited has no VmRSS: the upload's own error says why, not the poll.
  const rss = () => {
    try {
      return gw.proc.rssBytes();
    } catch {
      return rssPeak;
    }
  };
  const poll = setInterval(() => {
    rssPeak = Math.max(rssPeak, rss());
  }, 50);
  let duringUpload: Loop | undefined;
  let rssGrowth = 0;
  const [longRun, uploaded, burst] = await Promise.all([
    long(gw.url, longBody),
    upload(gw.url, sizes.uploadBytes).then(async (u) => {
      clearInterval(poll);
      rssGrowth = Math.max(rssPeak, rss()) - rssBefore;
      duringUpload = loopOf(await runtime());
      return u;
    }),
    (async () => {
      const t0 = performance.now();
      const r = await deps.load<{ samples: number[]; errors: number }>({ scenario: "ttft", target: semantic, concurrency: 16, perLane: Math.ceil(sizes.semanticMisses / 16), prompt: "Which regions does the service run in?", unique: true });
      return { misses: r.samples.length, errors: r.errors, ms: performance.now() - t0 };
    })(),
  ]);
  const duringHeavy = loopOf(await runtime());
  const heavyEnd = epochMs();
  run.child.kill("SIGUSR2");
  const r = await run.result;
  const withoutSamples = r.samples.filter((_, i) => r.startedAt[i]! < heavyStart);
  const withSamples = r.samples.filter((_, i) => r.startedAt[i]! >= heavyStart && r.startedAt[i]! <= heavyEnd);
  return { withoutSamples, withSamples, errors: r.errors, loop: { without, duringUpload: duringUpload!, duringHeavy }, rssGrowthBytes: rssGrowth, heavyMs: heavyEnd - heavyStart, long: longRun, upload: uploaded, burst };
}

export async function headOfLineScenario(sizes: HeadOfLineSizes, deps: HeadOfLineDeps) {
  const prompt = await longRequest(sizes.promptTokens);
  const window = prompt.tokens + LONG_MAX_TOKENS + WINDOW_MARGIN;
  const gw = await deps.startGateway(
    {
      // The upload is measured, not timed out: today's 100 MiB took longer than the default 30 s body deadline on this machine.
      server: { debugEndpoints: true, requestTimeoutMs: 600_000 },
      limits: { maxRequestBytes: 16 * MiB },
      cache: { lookupTimeoutMs: 1_000 },
      batch: { maxFileBytes: Math.min(200 * MiB, sizes.uploadBytes + MiB), maxLines: 50_000 },
    },
    models(window),
  );
  const rounds: Array<Awaited<ReturnType<typeof headOfLineRound>>> = [];
  try {
    // Warm every path once: the tokenizer's encoding, the upload's and the semantic cache's code and tables.
    await long(gw.url, prompt.body);
    await upload(gw.url, 256 * 1024);
    await deps.load({ scenario: "ttft", target: { kind: "sluice-grpc", url: gw.url, model: "semantic" }, concurrency: 4, perLane: 5, prompt: "warm-up", unique: true });
    for (let i = 0; i < sizes.rounds; i++) {
      const r = await headOfLineRound(sizes, deps, gw, prompt.body);
      rounds.push(r);
      deps.log(
        `head of line round ${i + 1}: small TTFT p99 ${round(summary(r.withoutSamples).p99)} ms alone (${r.withoutSamples.length}), ${round(summary(r.withSamples).p99)} ms beside the heavy work (${r.withSamples.length}); loop p99/max ${round(r.loop.without.p99)}/${round(r.loop.without.max)} ms alone, ${round(r.loop.duringUpload.p99)}/${round(r.loop.duringUpload.max)} ms during the upload (${round(r.upload.fileBytes / MiB)} MiB, ${r.upload.lines} lines, ${round(r.upload.ms)} ms); RSS +${round(r.rssGrowthBytes / MiB)} MiB; long prompt ${round(r.long.ms)} ms; ${r.burst.misses} semantic misses in ${round(r.burst.ms)} ms (${r.burst.errors} errors)`,
      );
    }
  } finally {
    await gw.proc.stop();
  }
  const without = summary(rounds.flatMap((r) => r.withoutSamples));
  const withHeavy = summary(rounds.flatMap((r) => r.withSamples));
  const worst = (pick: (r: (typeof rounds)[number]) => Loop): Loop => ({ p99: Math.max(...rounds.map((r) => pick(r).p99)), max: Math.max(...rounds.map((r) => pick(r).max)) });
  return {
    streams: sizes.streams,
    promptTokens: prompt.tokens,
    contextWindow: window,
    uploadBytes: rounds[0]!.upload.fileBytes,
    uploadLines: rounds[0]!.upload.lines,
    semanticMisses: sizes.semanticMisses,
    rounds: sizes.rounds,
    /** Small-stream TTFT, pooled over rounds: streams started before the heavy work, and while it ran. */
    ttftMs: { without, with: withHeavy },
    ratioP99: withHeavy.p99 / without.p99,
    errors: rounds.reduce((n, r) => n + r.errors + r.burst.errors, 0),
    /** The gateway's event-loop delay (the worst round): the small streams alone, during the upload (all heavy parts started with it), and over all the heavy work. */
    eventLoopMs: { without: worst((r) => r.loop.without), duringUpload: worst((r) => r.loop.duringUpload), duringHeavy: worst((r) => r.loop.duringHeavy) },
    /** The gateway's RSS peak during the upload over its RSS when the heavy work started (the worst round). */
    rssGrowthMiB: Math.max(...rounds.map((r) => r.rssGrowthBytes)) / MiB,
    parts: rounds.map((r) => ({ heavyMs: r.heavyMs, longMs: r.long.ms, uploadMs: r.upload.ms, semanticBurstMs: r.burst.ms })),
  };
}

export type HeadOfLineResult = Awaited<ReturnType<typeof headOfLineScenario>>;

export function headOfLineSection(r: HeadOfLineResult): string {
  const row = (name: string, t: ReturnType<typeof summary>, loop: Loop) => [name, t.n, round(t.p50), round(t.p99), `${round(loop.p99)} / ${round(loop.max)}`];
  return [
    `## Head of line (issue #47): ${r.streams} small streams (gRPC, TTFT at the client) alone, then beside a ${r.promptTokens}-token prompt through PII redaction and routing by need (window ${r.contextWindow}), a ${round(r.uploadBytes / MiB)} MiB batch-file upload (${r.uploadLines} lines) and ${r.semanticMisses} semantic-cache misses (embedded PGlite), all at once; ${r.rounds} round(s), pooled`,
    table(
      ["small streams", "streams", "TTFT p50 ms", "TTFT p99 ms", "gateway event-loop delay p99 / max ms"],
      [row("alone", r.ttftMs.without, r.eventLoopMs.without), row("beside the heavy work (loop: during the upload)", r.ttftMs.with, r.eventLoopMs.duringUpload)],
    ),
    "",
    `TTFT p99 beside ÷ alone ×${round(r.ratioP99)}; event-loop delay over all the heavy work p99 ${round(r.eventLoopMs.duringHeavy.p99)} ms, max ${round(r.eventLoopMs.duringHeavy.max)} ms; RSS growth during the upload ${round(r.rssGrowthMiB)} MiB; errors ${r.errors}. Each round's parts (ms): ${r.parts.map((p) => `heavy ${round(p.heavyMs)}, long prompt ${round(p.longMs)}, upload ${round(p.uploadMs)}, semantic burst ${round(p.semanticBurstMs)}`).join("; ")}.`,
    "",
  ].join("\n");
}
