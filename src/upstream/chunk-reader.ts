import { finished, type Readable } from "node:stream";

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
    const chunk = body.destroyed ? null : (body.read() as Uint8Array | null);
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
