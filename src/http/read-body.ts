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

/**
 * A whole request body, at most `maxRequestBytes`, within
 * `requestTimeoutMs`. A declared Content-Length over the limit is refused
 * before a byte is read; an undeclared one is counted as it arrives and
 * refused the moment it passes the limit (the rest is never read). Shared by
 * the RPC edges and the facade, so both refuse the same way.
 */
export async function readBody(req: AnyRequest, limits: BodyLimits): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limits.maxRequestBytes) throw bodyTooLarge(limits.maxRequestBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  const iterator = (req as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new GatewayError("request_timeout", `request body not received within ${limits.requestTimeoutMs} ms (server.requestTimeoutMs)`)),
      clampDelay(limits.requestTimeoutMs),
    );
  });
  expired.catch(() => undefined);
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), expired]);
      if (next.done) break;
      size += next.value.length;
      if (size > limits.maxRequestBytes) throw bodyTooLarge(limits.maxRequestBytes);
      chunks.push(next.value);
    }
  } finally {
    clearTimeout(timer);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}
