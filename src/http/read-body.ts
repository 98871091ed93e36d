import { GatewayError } from "../core/errors.js";
import { clampDelay } from "../core/timers.js";
import type { AnyRequest } from "./node-http.js";

export interface BodyLimits {
  /** Largest body accepted, in bytes. */
  readonly maxRequestBytes: number;
  /** Time for the whole body to arrive. */
  readonly requestTimeoutMs: number;
}

export function bodyTooLarge(limit: number): GatewayError {
  return new GatewayError("payload_too_large", `request body is larger than the limit of ${limit} bytes (limits.maxRequestBytes)`);
}

const LEFT = new GatewayError("canceled", "the client closed the connection before its request body ended");

/**
 * Lets the rest of a refused body flow away unread. A paused request with
 * data buffered never ends, and an HTTP/2 stream is only destroyed once its
 * request side has ended, even after RST_STREAM: left paused, the stream,
 * its access line and its connection would wait for the client to give up.
 * Over HTTP/1.1 the request guard bounds how long the rest is read
 * (see `lingerAfterRefusal`).
 */
function discardRest(req: AnyRequest): void {
  if (!req.complete) req.resume();
}

/**
 * A whole request body, at most `maxRequestBytes`, within
 * `requestTimeoutMs`. A declared Content-Length over the limit is refused
 * before a byte is read; an undeclared one is counted as it arrives and
 * refused the moment it passes the limit. `inspect` sees the first chunk
 * and may refuse early by throwing (the RPC edges read the envelope's
 * declared length there). Whatever is refused, the rest of the body is
 * discarded, never buffered. Shared by the RPC edges and the facade, so
 * both refuse the same way.
 */
export function readBody(req: AnyRequest, limits: BodyLimits, inspect?: (first: Buffer) => void): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limits.maxRequestBytes) {
    discardRest(req);
    return Promise.reject(bodyTooLarge(limits.maxRequestBytes));
  }
  // Gone while the request waited for its turn (authentication): no event would ever come. An HTTP/2
  // stream the client reset before anyone read it has its body dumped by Node, so it reads as ended.
  if (req.destroyed || req.readableEnded) return Promise.reject(LEFT);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      clearTimeout(timer);
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("close", onClose);
    };
    const fail = (error: unknown) => {
      stop();
      discardRest(req);
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limits.maxRequestBytes) return fail(bodyTooLarge(limits.maxRequestBytes));
      if (chunks.length === 0 && inspect) {
        try {
          inspect(chunk);
        } catch (error) {
          return fail(error);
        }
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    // Closed before `end` reached us: a body the parser completed may never be delivered now.
    const onClose = () => fail(LEFT);
    const timer = setTimeout(() => fail(new GatewayError("request_timeout", `request body not received within ${limits.requestTimeoutMs} ms (server.requestTimeoutMs)`)), clampDelay(limits.requestTimeoutMs));
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("close", onClose);
  });
}

/**
 * A request body as it arrives, a chunk at a time, for bodies too large to
 * hold (a batch file): the same bounds as readBody (`maxRequestBytes`,
 * `requestTimeoutMs` for the whole body), with backpressure: the request is
 * paused while the consumer works on a chunk, so a slow consumer slows the
 * client rather than filling the heap. A consumer that stops early (a
 * refusal) leaves the rest to be discarded, never buffered, and the
 * connection able to carry the answer.
 */
export async function* bodyChunks(req: AnyRequest, limits: BodyLimits): AsyncGenerator<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limits.maxRequestBytes) {
    discardRest(req);
    throw bodyTooLarge(limits.maxRequestBytes);
  }
  if (req.destroyed || req.readableEnded) throw LEFT;
  const queue: Buffer[] = [];
  let size = 0;
  let ended = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const poke = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const onData = (chunk: Buffer) => {
    size += chunk.length;
    if (size > limits.maxRequestBytes) failure ??= bodyTooLarge(limits.maxRequestBytes);
    else queue.push(chunk);
    req.pause();
    poke();
  };
  const onEnd = () => {
    ended = true;
    poke();
  };
  const onClose = () => {
    if (!ended) failure ??= LEFT;
    poke();
  };
  const timer = setTimeout(() => {
    failure ??= new GatewayError("request_timeout", `request body not received within ${limits.requestTimeoutMs} ms (server.requestTimeoutMs)`);
    poke();
  }, clampDelay(limits.requestTimeoutMs));
  req.on("data", onData);
  req.on("end", onEnd);
  req.on("close", onClose);
  try {
    for (;;) {
      if (failure !== undefined) throw failure;
      const chunk = queue.shift();
      if (chunk !== undefined) {
        yield chunk;
        continue;
      }
      if (ended) return;
      req.resume();
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    clearTimeout(timer);
    req.off("data", onData);
    req.off("end", onEnd);
    req.off("close", onClose);
    if (!ended) discardRest(req);
  }
}
