import { finished, type Readable } from "node:stream";

/**
 * Largest chunk handed on. A reader that fell behind finds two socket reads
 * (128 KiB) waiting, and `read()` would join them: decoded, that is a string
 * past V8's largest regular object, allocated on its own pages, which made
 * the SSE decoder's TextDecoder ten times dearer per byte (a tenth of the
 * gateway's CPU on the resumable-stream benchmark, whose streams lag).
 */
const MAX_CHUNK = 64 * 1024;

/** What the body holds now, at most MAX_CHUNK of it; null when it holds nothing (or is destroyed). */
export function readChunk(body: Readable): Uint8Array | null {
  if (body.destroyed) return null;
  return body.read(body.readableLength > MAX_CHUNK ? MAX_CHUNK : undefined) as Uint8Array | null;
}

/** Reads a body one chunk at a time. */
export interface ChunkReader {
  /** The next chunk, null at the end of the body; rejects with the stream's error (a premature close included). */
  read(): Promise<Uint8Array | null>;
}

/**
 * What `for await` over a Readable does (the same read() calls, so the same
 * backpressure: nothing buffered beyond the stream's high-water mark, and
 * the same errors), without the async generator Node puts behind a
 * Readable's iterator. A stream waiting for its next upstream read holds
 * one promise here instead of a suspended generator, its request, and the
 * promise and closures of its inner await. On slow streams (a token a
 * second) whatever a stream holds while it waits lives long enough to be
 * promoted, so this is old-generation garbage per token, not young.
 */
export function createChunkReader(body: Readable): ChunkReader {
  // undefined while the body is open, null once it ended, the error once it failed.
  let outcome: Error | null | undefined;
  let pending: { resolve(chunk: Uint8Array | null): void; reject(error: unknown): void } | undefined;

  /** A chunk, null at the end, or undefined when nothing is there yet; throws the body's error. */
  const poll = (): Uint8Array | null | undefined => {
    const chunk = readChunk(body);
    if (chunk !== null) return chunk;
    if (outcome === undefined) return undefined;
    if (outcome === null) return null;
    throw outcome;
  };
  const settle = () => {
    const waiting = pending;
    if (!waiting) return;
    let chunk: Uint8Array | null | undefined;
    try {
      chunk = poll();
    } catch (error) {
      pending = undefined;
      waiting.reject(error);
      return;
    }
    if (chunk === undefined) return;
    pending = undefined;
    waiting.resolve(chunk);
  };
  body.on("readable", settle);
  finished(body, { writable: false }, (error) => {
    outcome = error ?? null;
    settle();
  });

  return {
    read() {
      try {
        const chunk = poll();
        if (chunk !== undefined) return Promise.resolve(chunk);
      } catch (error) {
        return Promise.reject(error);
      }
      return new Promise((resolve, reject) => {
        pending = { resolve, reject };
      });
    },
  };
}
