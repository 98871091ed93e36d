import { once } from "node:events";
import type { SimReply } from "./exchange.js";
import type { Knobs } from "./knobs.js";
import { createRandom } from "./random.js";
import { now, type RecordBook, type RequestRecord } from "./records.js";
import type { Script } from "./script.js";
import type { Frame, SimRequest, WireFormat } from "./wire.js";

const EOL = { lf: "\n", crlf: "\r\n", cr: "\r" } as const;

/**
 * Waits `ms`, or resolves false as soon as the client leaves. On the
 * global timers, not node:timers/promises: a test's fake clock then moves
 * the simulator's delays with the gateway's.
 */
export function pause(ms: number, gone: AbortSignal): Promise<boolean> {
  if (ms <= 0 || gone.aborted) return Promise.resolve(!gone.aborted);
  return new Promise((resolve) => {
    const onGone = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      gone.removeEventListener("abort", onGone);
      resolve(true);
    }, ms);
    gone.addEventListener("abort", onGone, { once: true });
  });
}

/**
 * Writes one response's bytes with backpressure, tracking what reaches the
 * reader and whether the client is still there. Every write waits for
 * the reader to want more, so a slow gateway slows the simulator exactly
 * like a real server.
 */
function createResponseWriter(reply: SimReply, record: RequestRecord, records: RecordBook) {
  return async function write(bytes: Buffer): Promise<boolean> {
    if (reply.gone.aborted || reply.closed) return false;
    record.bytesWritten += bytes.length;
    if (reply.write(bytes)) return true;
    record.waitingForDrain = true;
    records.touch(record);
    try {
      return await reply.drained();
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

/**
 * Milliseconds until token `index` (from 0) is due on a fixed clock that
 * started with token 0 at `firstAt`: never negative, so a late token goes at
 * once and the ones after it keep the original schedule.
 */
export function dueIn(firstAt: number, index: number, intervalMs: number, now: number): number {
  return Math.max(0, firstAt + index * intervalMs - now);
}

function encodeSse(frame: Frame, eol: string): Buffer {
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
  readonly reply: SimReply;
  readonly format: WireFormat;
  readonly knobs: Knobs;
  readonly record: RequestRecord;
  readonly records: RecordBook;
  readonly gone: AbortSignal;
  readonly eol: string;
  /** Writes bytes straight to the reader, with backpressure. */
  readonly write: (bytes: Buffer) => Promise<boolean>;
  /** Writes bytes through the chunking policy. */
  readonly emit: (bytes: Buffer) => Promise<boolean>;
  /** Writes whatever the chunker still holds. */
  readonly flush: () => Promise<boolean>;
  /** A keepalive in the format's own shape. */
  readonly ping: Buffer;
  /** One frame as the format writes it (SSE unless the format has its own framing). */
  readonly encodeFrame: (frame: Frame, eol: string) => Buffer;
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

/** What one streamed answer needs: the script to say and where to report. */
export interface StreamInput {
  readonly reply: SimReply;
  readonly format: WireFormat;
  readonly request: SimRequest;
  readonly knobs: Knobs;
  readonly script: Script;
  readonly record: RequestRecord;
  readonly records: RecordBook;
}

/** Streams `script` as the format's events: pacing, chunking, pings, holds and the knobs' failures. */
export async function streamResponse(input: StreamInput): Promise<void> {
  const { reply, format, request, knobs, record, records, script } = input;
  const gone = reply.gone;
  const frames = format.streamFrames(script, request, knobs, `sim-${record.id}`);
  const write = createResponseWriter(reply, record, records);
  const framing = format.framing;
  const encodeFrame = framing ? (frame: Frame) => framing.encode(frame) : encodeSse;
  const chunker = createChunker(knobs);
  const bulk: Buffer[] = [];
  const run: StreamRun = {
    reply,
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
    encodeFrame,
  };
  const ping = run.ping;
  const failAt = knobs.fail === "none" ? frames.length : failureFrame(frames, knobs.failAt);

  reply.head(200, { "content-type": framing?.contentType ?? "text/event-stream", "cache-control": "no-cache" });
  record.headersAt = now();
  records.touch(record);

  if ((knobs.pingEvery > 0 || knobs.pingMs > 0) && !(await run.emit(ping))) return;
  if (!(await silence(run, knobs.ttftMs, ping))) return;

  let firstTokenAt = 0;
  for (let i = 0; i < frames.length; i++) {
    const frame = frames[i]!;
    if (i === failAt) return fail(run);
    if (frame.token && record.tokensWritten === knobs.holdAt && record.heldAt === undefined) {
      // Everything before the hold reaches the reader; then silence until released.
      if (!(await run.flush()) || !(await records.hold(record, gone))) return;
    }
    if (frame.token && record.tokensWritten > 0) {
      const wait = knobs.intervalMs > 0 ? dueIn(firstTokenAt, record.tokensWritten, knobs.intervalMs, performance.now()) : knobs.delayMs;
      if (!(await silence(run, wait, ping))) return;
    }
    if (frame.token && record.tokensWritten === 0) firstTokenAt = performance.now();
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
  reply.end();
}

async function fail(run: StreamRun): Promise<void> {
  const { reply, knobs, eol } = run;
  run.record.outcome = "failed";
  switch (knobs.fail) {
    case "reset":
      // TCP RST: the peer may lose bytes still in its receive buffer, as with a real crash.
      await run.flush();
      reply.disconnect("reset");
      return;
    case "drop":
      // FIN in the middle of the chunked body: everything sent arrives, then the body is cut.
      await run.flush();
      reply.disconnect("cut");
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
      // A whole frame whose payload is not JSON; in a framing of its own, framed as it is.
      if (!(await run.emit(run.format.framing ? run.encodeFrame({ data: '{"unterminated', token: false }, eol) : Buffer.from(`data: {"choices":[{"delta":{"content":"unterminated${eol}${eol}`)))) return;
      break;
    case "oversized": {
      if (!(await run.flush()) || !(await run.write(Buffer.from('data: {"pad":"')))) return;
      const block = Buffer.alloc(64 * 1024, "x");
      for (let sent = 0; sent < knobs.oversizedBytes; sent += block.length) if (!(await run.write(block))) return;
      if (!(await run.write(Buffer.from(`"}${eol}${eol}`)))) return;
      break;
    }
    case "error_event":
      if (!(await run.emit(run.encodeFrame(run.format.inBandError("simulated upstream failure", knobs.inband), eol)))) return;
      break;
    default:
      break;
  }
  if (await run.flush()) reply.end();
}
