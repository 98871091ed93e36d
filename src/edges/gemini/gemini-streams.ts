import type { Delta } from "../../core/delta.js";
import type { SseCodec } from "../sse/write-sse.js";
import { sendGoogleError, toGoogleError } from "./gemini-errors.js";
import { geminiParam } from "./gemini-params.js";
import type { GenerateContentResponse } from "./to-gemini.js";

const SSE_KEEPALIVE = ": keepalive\n\n";

/**
 * `?alt=sse`: `data: {chunk}` events. A failure after the start is an
 * `{"error": …}` event, then the same object bare, with no event around
 * it: the genai SDK (and so Gemini CLI) raises only on a bare error body
 * or on bytes left over at the end, never on an error event, and would
 * otherwise take the truncated answer as whole. SSE parsers skip the bare
 * line and read the event.
 */
export function sseCodec(encode: (delta: Delta) => GenerateContentResponse[]): SseCodec {
  return {
    events: (delta, push) => {
      for (const chunk of encode(delta)) push(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
    },
    heartbeat: SSE_KEEPALIVE,
    dropped: (params) => params.map(geminiParam),
    end: () => undefined,
    failure: (error, push) => {
      const body = JSON.stringify(toGoogleError(error).body);
      push(`data: ${body}\r\n\r\n${body}`);
    },
    refuse: sendGoogleError,
  };
}

/**
 * Without `alt=sse`, streamGenerateContent answers one JSON array written
 * element by element (`[{…}\n,{…}]`). Whitespace is the keepalive; a
 * failure after the start is a last `{"error": …}` element and the array
 * is closed, so the body is still valid JSON a client reads the error from.
 */
export function arrayCodec(encode: (delta: Delta) => GenerateContentResponse[]): SseCodec {
  let opened = false;
  const open = () => {
    const first = !opened;
    opened = true;
    return first ? "[" : "\r\n,";
  };
  return {
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no" },
    events: (delta, push) => {
      for (const chunk of encode(delta)) push(`${open()}${JSON.stringify(chunk)}`);
    },
    heartbeat: "\n",
    dropped: (params) => params.map(geminiParam),
    end: (push) => push(opened ? "]" : "[]"),
    failure: (error, push) => push(`${open()}${JSON.stringify(toGoogleError(error).body)}]`),
    refuse: sendGoogleError,
  };
}
