import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { currentCall } from "./call-context.js";

/**
 * A `fetch` for the SDK's streamable HTTP transport that reads no more
 * than `maxBytes` of an answer: the body is counted as it streams, and
 * past the bound the rest is cancelled (the socket is released, nothing
 * more is read) and the call that made it is told (call-context.ts), so
 * that it fails with `tooLarge` instead of waiting for a message that
 * will never come. A POST's body is one call's answer (with its progress
 * events) and is counted whole; the long-lived GET stream carries
 * notifications for as long as the session lives, so only each event
 * (bytes since the last blank line) is bounded there.
 *
 * `headers` are the server's static headers (`headers`, `headersFromEnv`);
 * a call's `bearer` replaces their `Authorization`.
 */
export function boundedFetch(maxBytes: number, onOverflow: (read: number) => void = () => {}): FetchLike {
  return async (url, init) => {
    const call = currentCall();
    let request = init;
    if (call?.bearer !== undefined) {
      const headers = new Headers(init?.headers);
      headers.set("authorization", `Bearer ${call.bearer}`);
      request = { ...init, headers };
    }
    const response = await fetch(url, request);
    if (!response.body) return response;
    const perEvent = (init?.method ?? "GET").toUpperCase() === "GET";
    const body = countBytes(response.body, maxBytes, perEvent, (read) => {
      onOverflow(read);
      call?.overflow(read);
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

const LF = 0x0a;

function countBytes(source: ReadableStream<Uint8Array>, maxBytes: number, perEvent: boolean, overflow: (read: number) => void): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let total = 0;
  let sinceEvent = 0;
  let lastByte = -1;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      total += value.byteLength;
      sinceEvent += value.byteLength;
      if (perEvent) {
        // Bytes after the last blank line ("\n\n", "\r\n\r\n" ends in "\n\n" once "\r" is ignored) start a new event.
        const end = lastBlankLine(value, lastByte);
        if (end >= 0) sinceEvent = value.byteLength - end;
        lastByte = value[value.byteLength - 1] ?? lastByte;
      }
      if ((perEvent ? sinceEvent : total) > maxBytes) {
        overflow(total);
        controller.error(new Error("answer larger than mcp.maxResultBytes"));
        await reader.cancel().catch(() => {});
        return;
      }
      controller.enqueue(value);
    },
    async cancel(reason) {
      await reader.cancel(reason);
    },
  });
}

/** The index just past the last "\n\n" (carriage returns between them ignored) in `chunk`, or -1. */
function lastBlankLine(chunk: Uint8Array, previous: number): number {
  let prevLf = previous === LF;
  let found = -1;
  for (let i = 0; i < chunk.byteLength; i++) {
    const byte = chunk[i];
    if (byte === LF) {
      if (prevLf) found = i + 1;
      prevLf = true;
    } else if (byte !== 0x0d) prevLf = false;
  }
  return found;
}
