import { once } from "node:events";
import { GatewayError } from "../../core/errors.js";
import type { AnyRequest, AnyResponse } from "../../server/health.js";

/** Reads a request body up to `limit` bytes; `payload_too_large` past it, without reading the rest. */
export async function readBody(req: AnyRequest, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) {
    throw new GatewayError("payload_too_large", `request body is larger than the limit of ${limit} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new GatewayError("payload_too_large", `request body is larger than the limit of ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export function sendJson(res: AnyResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

/**
 * Writes with backpressure: resolves once the response can take more, or
 * false if the client is gone. Never lets a slow client grow our buffers.
 */
export async function write(res: AnyResponse, text: string, gone: AbortSignal): Promise<boolean> {
  if (gone.aborted || res.destroyed) return false;
  if (res.write(text)) return true;
  try {
    await once(res as unknown as NodeJS.EventEmitter, "drain", { signal: gone });
    return true;
  } catch {
    return false;
  }
}
