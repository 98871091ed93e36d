import { createParser, type EventSourceParser } from "eventsource-parser";
import { GatewayError } from "../core/errors.js";

/** One dispatched server-sent event. */
export interface SseEvent {
  /** The `event:` field; undefined when the server sent none (i.e. "message"). */
  readonly event: string | undefined;
  readonly data: string;
}

export interface SseDecoderOptions {
  /**
   * Largest event (pending line plus accumulated data) kept in memory, in
   * UTF-16 code units (equal to bytes for ASCII JSON). Past it the decoder
   * throws instead of buffering: a broken upstream must not grow our heap.
   */
  readonly maxEventSize: number;
}

/**
 * Turns SSE bytes into events. Pure: no I/O, no timers; feed it chunks split
 * anywhere (inside a line, a CRLF or a multi-byte character) and it returns
 * the events completed by each chunk. One instance per upstream response.
 */
export interface SseDecoder {
  /** Events completed by this chunk, in order. Throws GatewayError `upstream_protocol` for an oversized event. */
  push(chunk: Uint8Array): SseEvent[];
  /**
   * Ends the stream. An event without its terminating blank line is dropped,
   * as the SSE specification requires: a cut-off event is not an event.
   */
  end(): SseEvent[];
}

/**
 * Line splitting, field parsing and the buffer limit come from
 * `eventsource-parser` (spec-complete: LF/CR/CRLF, BOM, multi-line data,
 * comments, `data:` with or without a space). This wrapper adds the byte
 * boundary (streaming UTF-8 decode) and turns its limit into our error.
 */
export function createSseDecoder(options: SseDecoderOptions): SseDecoder {
  const { maxEventSize } = options;
  const text = new TextDecoder("utf-8");
  let out: SseEvent[] = [];
  let oversized = false;
  let endsWithCr = false;
  const parser: EventSourceParser = createParser({
    maxBufferSize: maxEventSize,
    onEvent(message) {
      // A complete event inside one large chunk is dispatched without passing
      // through the parser's buffer check; hold it to the same limit.
      if (message.data.length > maxEventSize) oversized = true;
      else out.push({ event: message.event, data: message.data });
    },
    onError(error) {
      if (error.type === "max-buffer-size-exceeded") oversized = true;
    },
  });

  function take(): SseEvent[] {
    if (oversized) {
      out = [];
      throw new GatewayError("upstream_protocol", `upstream event exceeds the maximum event size of ${maxEventSize} bytes`);
    }
    const events = out;
    out = [];
    return events;
  }

  return {
    push(chunk) {
      if (oversized) return take();
      const decoded = text.decode(chunk, { stream: true });
      if (decoded !== "") {
        endsWithCr = decoded.charCodeAt(decoded.length - 1) === 13;
        parser.feed(decoded);
      }
      return take();
    },
    end() {
      const tail = text.decode();
      if (tail !== "" && !oversized) parser.feed(tail);
      // The parser holds a final CR back in case an LF follows; at the end
      // of the stream nothing will, so it is a line end on its own.
      else if (endsWithCr && !oversized) parser.feed("\n");
      return take();
    },
  };
}
