import { EventEmitter, once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { applyScript, type Knobs, parseKnobs } from "./knobs.js";
import { anthropicWire } from "./anthropic-wire.js";
import { geminiWire, isGeminiPath } from "./gemini-wire.js";
import { openAiWire } from "./openai-wire.js";
import { createRandom } from "./random.js";
import { createRecordBook, now, type RecordBook, type RequestRecord } from "./records.js";
import { answerTokens, jsonAnswer } from "./json-answer.js";
import { buildScript, type Script } from "./script.js";
import type { Frame, SimRequest, WireFormat } from "./wire.js";

export interface SimulatorOptions {
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port?: number;
}

export interface SimulatorStats {
  readonly openConnections: number;
  readonly activeRequests: number;
  readonly totalRequests: number;
}

/** A running upstream simulator. */
export interface Simulator {
  /** Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:1234/v1 */
  readonly openAiBaseUrl: string;
  /** Base URL of the Anthropic Messages API (…/v1). */
  readonly anthropicBaseUrl: string;
  /** Base URL of the Gemini API (…/v1beta). */
  readonly geminiBaseUrl: string;
  readonly origin: string;
  readonly records: RecordBook;
  stats(): SimulatorStats;
  /** Resolves once no client connection is open (now or later); rejects after `timeoutMs`. */
  whenNoConnections(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;
const EOL = { lf: "\n", crlf: "\r\n", cr: "\r" } as const;

function formatFor(method: string | undefined, path: string): WireFormat | undefined {
  if (method !== "POST") return undefined;
  if (path === "/v1/chat/completions") return openAiWire;
  if (path === "/v1/messages") return anthropicWire;
  if (isGeminiPath(path)) return geminiWire;
  return undefined;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new Error("request body too large");
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * Writes one response's bytes with backpressure, tracking what reaches the
 * socket and whether the client is still there. Every write waits for
 * `drain`, so a slow gateway slows the simulator exactly like a real server.
 */
function createResponseWriter(res: ServerResponse, record: RequestRecord, records: RecordBook, gone: AbortSignal) {
  return async function write(bytes: Buffer): Promise<boolean> {
    if (gone.aborted || res.destroyed) return false;
    record.bytesWritten += bytes.length;
    if (res.write(bytes)) return true;
    record.waitingForDrain = true;
    records.touch(record);
    try {
      await once(res, "drain", { signal: gone });
      return true;
    } catch {
      return false;
    } finally {
      record.waitingForDrain = false;
      records.touch(record);
    }
  };
}

/** Splits a frame's bytes at seeded random offsets; the last piece carries into the next write. */
function createChunker(knobs: Knobs) {
  const next = createRandom(knobs.seed ^ 0xc0ffee);
  let carry: Buffer = Buffer.alloc(0);
  return {
    pieces(bytes: Buffer): Buffer[] {
      const all = carry.length > 0 ? Buffer.concat([carry, bytes]) : bytes;
      if (knobs.chunking !== "random") {
        carry = Buffer.alloc(0);
        return [all];
      }
      const out: Buffer[] = [];
      let at = 0;
      while (all.length - at > 1 && next() < 0.7) {
        const cut = at + 1 + Math.floor(next() * (all.length - at - 1));
        out.push(all.subarray(at, cut));
        at = cut;
      }
      carry = Buffer.from(all.subarray(at));
      return out;
    },
    flush(): Buffer[] {
      const rest = carry;
      carry = Buffer.alloc(0);
      return rest.length > 0 ? [rest] : [];
    },
  };
}

function encodeFrame(frame: Frame, eol: string): Buffer {
  const event = frame.event === undefined ? "" : `event: ${frame.event}${eol}`;
  return Buffer.from(`${event}data: ${frame.data}${eol}${eol}`, "utf8");
}

/** Index of the frame before which a mid-stream failure happens. */
function failureFrame(frames: readonly Frame[], failAt: number): number {
  let tokens = 0;
  for (let i = 0; i < frames.length; i++) {
    if (frames[i]!.token) {
      if (tokens === failAt) return i;
      tokens++;
    } else if (tokens > 0 && tokens <= failAt && !frames.slice(i).some((f) => f.token)) {
      return i;
    }
  }
  return frames.length;
}

/** One streaming response in progress: what it writes with and where it reports. */
interface StreamRun {
  readonly res: ServerResponse;
  readonly format: WireFormat;
  readonly knobs: Knobs;
  readonly record: RequestRecord;
  readonly records: RecordBook;
  readonly gone: AbortSignal;
  readonly eol: string;
  /** Writes bytes straight to the socket, with backpressure. */
  readonly write: (bytes: Buffer) => Promise<boolean>;
  /** Writes bytes through the chunking policy. */
  readonly emit: (bytes: Buffer) => Promise<boolean>;
  /** Writes whatever the chunker still holds. */
  readonly flush: () => Promise<boolean>;
  /** A keepalive in the format's own shape. */
  readonly ping: Buffer;
}

async function pause(ms: number, gone: AbortSignal): Promise<boolean> {
  if (ms <= 0) return !gone.aborted;
  try {
    await sleep(ms, undefined, { signal: gone });
    return true;
  } catch {
    return false;
  }
}

/** Waits `ms`, writing a ping comment every `run.knobs.pingMs` of it (a model "thinking" behind a keepalive). */
async function silence(run: StreamRun, ms: number, ping: Buffer): Promise<boolean> {
  const every = run.knobs.pingMs;
  if (every <= 0 || ms <= every) return pause(ms, run.gone);
  for (let left = ms; left > 0; left -= every) {
    if (!(await pause(Math.min(every, left), run.gone))) return false;
    if (left > every && !(await run.emit(ping))) return false;
  }
  return true;
}

async function writeAll(write: (b: Buffer) => Promise<boolean>, pieces: readonly Buffer[]): Promise<boolean> {
  for (const piece of pieces) if (!(await write(piece))) return false;
  return true;
}

async function streamResponse(
  res: ServerResponse,
  format: WireFormat,
  request: SimRequest,
  knobs: Knobs,
  record: RequestRecord,
  records: RecordBook,
  gone: AbortSignal,
): Promise<void> {
  const script = scriptFor(knobs, request);
  const frames = format.streamFrames(script, request, knobs, `sim-${record.id}`);
  const write = createResponseWriter(res, record, records, gone);
  const chunker = createChunker(knobs);
  const bulk: Buffer[] = [];
  const run: StreamRun = {
    res,
    format,
    knobs,
    record,
    records,
    gone,
    eol: EOL[knobs.eol],
    write,
    emit: knobs.chunking === "bulk" ? async (b) => (bulk.push(b), true) : (b) => writeAll(write, chunker.pieces(b)),
    flush: () => writeAll(write, [...bulk.splice(0), ...chunker.flush()]),
    ping: format.ping ? encodeFrame(format.ping(), EOL[knobs.eol]) : Buffer.from(`: ping${EOL[knobs.eol]}`, "utf8"),
  };
  const ping = run.ping;
  const failAt = knobs.fail === "none" ? frames.length : failureFrame(frames, knobs.failAt);

  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.flushHeaders();
  record.headersAt = now();
  records.touch(record);

  if ((knobs.pingEvery > 0 || knobs.pingMs > 0) && !(await run.emit(ping))) return;
  if (!(await silence(run, knobs.ttftMs, ping))) return;

  for (let i = 0; i < frames.length; i++) {
    const frame = frames[i]!;
    if (i === failAt) return fail(run);
    if (frame.token && record.tokensWritten === knobs.holdAt && record.heldAt === undefined) {
      // Everything before the hold reaches the socket; then silence until released.
      if (!(await run.flush()) || !(await records.hold(record, gone))) return;
    }
    if (frame.token && record.tokensWritten > 0 && !(await silence(run, knobs.delayMs, ping))) return;
    if (!(await run.emit(encodeFrame(frame, run.eol)))) return;
    if (frame.token) {
      record.tokensWritten++;
      record.firstTokenAt ??= now();
      if (gone.aborted) record.tokensAfterClose++;
      if (knobs.pingEvery > 0 && record.tokensWritten % knobs.pingEvery === 0 && !(await run.emit(ping))) return;
    }
  }
  if (format.terminator && !(await run.emit(encodeFrame(format.terminator, run.eol)))) return;
  if (!(await run.flush())) return;
  record.outcome = "completed";
  res.end();
}

async function fail(run: StreamRun): Promise<void> {
  const { res, knobs, eol } = run;
  run.record.outcome = "failed";
  switch (knobs.fail) {
    case "reset":
      // TCP RST: the peer may lose bytes still in its receive buffer, as with a real crash.
      await run.flush();
      res.socket?.resetAndDestroy();
      return;
    case "drop":
      // FIN in the middle of the chunked body: everything sent arrives, then the body is cut.
      await run.flush();
      res.socket?.end();
      return;
    case "stall":
      // Silent until the client leaves (or, with ping_ms, pinging but sending no content).
      run.record.outcome = "stalled";
      run.records.touch(run.record);
      await run.flush();
      while (knobs.pingMs > 0 && (await pause(knobs.pingMs, run.gone)) && (await run.emit(run.ping))) {
        if (!(await run.flush())) break;
      }
      if (!run.gone.aborted) await once(run.gone, "abort").catch(() => undefined);
      return;
    case "malformed":
      if (!(await run.emit(Buffer.from(`data: {"choices":[{"delta":{"content":"unterminated${eol}${eol}`)))) return;
      break;
    case "oversized": {
      if (!(await run.flush()) || !(await run.write(Buffer.from('data: {"pad":"')))) return;
      const block = Buffer.alloc(64 * 1024, "x");
      for (let sent = 0; sent < knobs.oversizedBytes; sent += block.length) if (!(await run.write(block))) return;
      if (!(await run.write(Buffer.from(`"}${eol}${eol}`)))) return;
      break;
    }
    case "error_event":
      if (!(await run.emit(encodeFrame(run.format.inBandError("simulated upstream failure", knobs.inband), eol)))) return;
      break;
    default:
      break;
  }
  if (await run.flush()) res.end();
}

function countWords(texts: readonly string[]): number {
  return texts.join(" ").split(/\s+/).filter(Boolean).length;
}

/** What the model says: the seeded words, or a JSON answer when the request asked for JSON. */
function scriptFor(knobs: Knobs, request: SimRequest): Script {
  const answer = request.json ? answerTokens(jsonAnswer(request.json.schema, knobs.seed)) : undefined;
  return buildScript(knobs, request.toolNames, countWords(request.texts), answer);
}

/** Per-script request counters: what `fail_first`, `fail_rate` and `slow_every` count. */
type Scripts = Map<string, number>;

async function handleGeneration(req: IncomingMessage, res: ServerResponse, format: WireFormat, records: RecordBook, scripts: Scripts): Promise<void> {
  let request: SimRequest;
  let knobs: Knobs;
  let body: unknown;
  try {
    const url = new URL(req.url ?? "/", "http://simulator");
    body = JSON.parse(await readBody(req)) as unknown;
    request = format.parseRequest(body, url);
    knobs = parseKnobs(request.model, request.texts);
    const script = knobs.script ?? request.model;
    const n = (scripts.get(script) ?? 0) + 1;
    scripts.set(script, n);
    const seed = knobs.seed;
    knobs = applyScript(knobs, n, (i) => createRandom(seed * 7919 + i)());
    // An older model without native structured outputs refuses the schema, as providers do.
    if (!knobs.structured && request.json?.schema) throw new Error("structured outputs (a response schema) are not supported by this model");
  } catch (error) {
    sendJson(res, 400, format.errorBody(400, error instanceof Error ? error.message : "bad request"));
    return;
  }
  const requestId = req.headers["x-request-id"];
  const record = records.add({
    format: format.name,
    model: request.model,
    ...(knobs.tag === undefined ? {} : { tag: knobs.tag, body }),
    ...(typeof requestId === "string" ? { requestId } : {}),
    ...(typeof req.headers.traceparent === "string" ? { traceparent: req.headers.traceparent } : {}),
    arrivedAt: now(),
    tokensWritten: 0,
    tokensAfterClose: 0,
    bytesWritten: 0,
    outcome: "streaming",
  });
  const goneController = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished && (record.outcome === "streaming" || record.outcome === "stalled")) {
      record.clientClosedAt = now();
      record.outcome = "client_closed";
    }
    record.endedAt ??= now();
    goneController.abort();
    records.touch(record);
  });
  const gone = goneController.signal;

  if (knobs.fail === "reset_before_headers") {
    record.outcome = "failed";
    req.socket.resetAndDestroy();
    return;
  }
  if (knobs.headersMs > 0) await sleep(knobs.headersMs, undefined, { signal: gone }).catch(() => undefined);
  if (gone.aborted) return;
  if (knobs.fail === "status") {
    record.outcome = "failed";
    const headers: Record<string, string> = knobs.retryAfter === undefined ? {} : { "retry-after": String(knobs.retryAfter) };
    sendJson(res, knobs.status, format.errorBody(knobs.status, `simulated status ${knobs.status}`), headers);
    return;
  }
  if (!request.stream) {
    const script = scriptFor(knobs, request);
    const wait = knobs.ttftMs + knobs.delayMs * Math.max(0, script.steps.length - 1);
    if (wait > 0) await sleep(wait, undefined, { signal: gone }).catch(() => undefined);
    if (gone.aborted) return;
    record.tokensWritten = script.steps.length;
    record.outcome = "completed";
    sendJson(res, 200, format.completeBody(script, request, `sim-${record.id}`));
    return;
  }
  await streamResponse(res, format, request, knobs, record, records, gone);
}

function handleControl(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  records: RecordBook,
  scripts: Scripts,
  stats: () => SimulatorStats,
  whenNoRequests: (timeoutMs: number) => Promise<void>,
): void {
  const tag = url.searchParams.get("tag");
  const matches = (r: RequestRecord) => tag === null || r.tag === tag;
  if (req.method === "GET" && url.pathname === "/_sim/requests") {
    sendJson(res, 200, records.all().filter(matches));
  } else if (req.method === "GET" && url.pathname === "/_sim/stats") {
    sendJson(res, 200, stats());
  } else if (req.method === "POST" && url.pathname === "/_sim/release" && tag !== null) {
    records.release(tag);
    sendJson(res, 200, { ok: true });
  } else if (req.method === "POST" && url.pathname === "/_sim/reset") {
    records.clear();
    scripts.clear();
    sendJson(res, 200, { ok: true });
  } else if (req.method === "GET" && url.pathname === "/_sim/idle") {
    // Long-poll until no generation request is in progress, e.g. after a
    // gateway that does not cancel upstream left streams running.
    const timeoutMs = Math.min(Number(url.searchParams.get("timeout_ms") ?? 10_000) || 10_000, 120_000);
    whenNoRequests(timeoutMs).then(() => sendJson(res, 200, stats()), () => sendJson(res, 408, stats()));
  } else if (req.method === "GET" && url.pathname === "/_sim/wait") {
    // Long-poll until a matching request has ended: lets another process
    // (a benchmark) wait on the simulator's observation instead of sleeping.
    const timeoutMs = Math.min(Number(url.searchParams.get("timeout_ms") ?? 10_000) || 10_000, 120_000);
    records
      .waitFor((r) => matches(r) && r.endedAt !== undefined, timeoutMs)
      .then((r) => sendJson(res, 200, r), (e: Error) => sendJson(res, 408, { error: e.message }));
  } else {
    sendJson(res, 404, { error: { message: `no route ${req.method} ${url.pathname}`, type: "not_found" } });
  }
}

/** Starts the simulator on a loopback port. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const records = createRecordBook();
  const scripts: Scripts = new Map();
  const sockets = new Set<Socket>();
  const connectionsGone = new EventEmitter();
  let active = 0;
  const whenNoRequests = async (timeoutMs: number) => {
    if (active === 0) return;
    await once(connectionsGone, "no-requests", { signal: AbortSignal.timeout(timeoutMs) });
  };
  const stats = (): SimulatorStats => ({ openConnections: sockets.size, activeRequests: active, totalRequests: records.all().length });

  const server: Server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    const url = new URL(req.url ?? "/", "http://simulator");
    const format = formatFor(req.method, url.pathname);
    if (!format) return handleControl(req, res, url, records, scripts, stats, whenNoRequests);
    active++;
    res.once("close", () => {
      if (--active === 0) connectionsGone.emit("no-requests");
    });
    handleGeneration(req, res, format, records, scripts).catch(() => res.destroy());
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      if (sockets.size === 0) connectionsGone.emit("idle");
    });
  });
  // A deep accept queue: a gateway opening thousands of upstream connections
  // at once must not see SYN drops that a real provider would not cause.
  server.listen({ port: options.port ?? 0, host: options.host ?? "127.0.0.1", backlog: 65_535 });
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const origin = `http://${options.host ?? "127.0.0.1"}:${port}`;
  return {
    origin,
    openAiBaseUrl: `${origin}/v1`,
    anthropicBaseUrl: `${origin}/v1`,
    geminiBaseUrl: `${origin}/v1beta`,
    records,
    stats,
    async whenNoConnections(timeoutMs) {
      if (sockets.size === 0) return;
      await once(connectionsGone, "idle", { signal: AbortSignal.timeout(timeoutMs) });
    },
    async close() {
      const closed = once(server, "close");
      server.close();
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
