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
   * Largest event kept in memory, in bytes as they arrive on the wire (every
   * line of the event, with its line ends). Past it the decoder throws
   * instead of buffering: a broken upstream must not grow our heap.
   */
  readonly maxEventSize: number;
  /** Who sends the stream, for the error message (a configured provider name). */
  readonly source?: string;
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

const LF = 10;
const CR = 13;

/**
 * Counts the bytes of the event being received, at the byte level, before
 * any decoding: the parser's own limit counts UTF-16 code units, which let
 * non-ASCII events reach about three times the limit. Line ends are found
 * with native searches, so the cost per chunk is a few calls, not a loop per
 * byte.
 */
function createEventSizeMeter(max: number) {
  let eventBytes = 0;
  let lineBytes = 0;
  let afterCr = false;
  return function measure(chunk: Uint8Array): boolean {
    const n = chunk.length;
    let i = 0;
    let nextLf = -2;
    let nextCr = -2;
    while (i < n) {
      if (nextLf !== -1 && nextLf < i) nextLf = chunk.indexOf(LF, i);
      if (nextCr !== -1 && nextCr < i) nextCr = chunk.indexOf(CR, i);
      const end = nextLf === -1 ? nextCr : nextCr === -1 ? nextLf : Math.min(nextLf, nextCr);
      if (end === -1) {
        lineBytes += n - i;
        eventBytes += n - i;
        afterCr = false;
        break;
      }
      const length = end - i;
      if (length === 0 && afterCr && chunk[end] === LF) {
        // The LF of a CRLF whose CR ended the line already.
        afterCr = false;
        eventBytes++;
        i = end + 1;
        continue;
      }
      lineBytes += length;
      eventBytes += length + 1;
      // An empty line ends the event.
      if (lineBytes === 0) eventBytes = 0;
      lineBytes = 0;
      afterCr = chunk[end] === CR;
      i = end + 1;
      if (eventBytes > max) return false;
    }
    return eventBytes <= max;
  };
}

/**
 * Line splitting, field parsing and spec details come from
 * `eventsource-parser` (LF/CR/CRLF, BOM, multi-line data, comments, `data:`
 * with or without a space). This wrapper adds the byte boundary (streaming
 * UTF-8 decode) and the byte-exact size limit.
 */
export function createSseDecoder(options: SseDecoderOptions): SseDecoder {
  const { maxEventSize } = options;
  const text = new TextDecoder("utf-8");
  const withinLimit = createEventSizeMeter(maxEventSize);
  let out: SseEvent[] = [];
  let oversized = false;
  let endsWithCr = false;
  const parser: EventSourceParser = createParser({
    // A second line of defence; code units never outnumber the bytes they came from.
    maxBufferSize: maxEventSize,
    onEvent(message) {
      out.push({ event: message.event, data: message.data });
    },
    onError(error) {
      if (error.type === "max-buffer-size-exceeded") oversized = true;
    },
  });

  function take(): SseEvent[] {
    if (oversized) {
      out = [];
      const who = options.source === undefined ? "upstream" : `provider ${options.source}`;
      throw new GatewayError("upstream_protocol", `${who} sent an event larger than the maximum event size of ${maxEventSize} bytes (limits.maxEventBytes)`, options.source === undefined ? {} : { provider: options.source });
    }
    const events = out;
    out = [];
    return events;
  }

  return {
    push(chunk) {
      if (oversized || !withinLimit(chunk)) {
        oversized = true;
        return take();
      }
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
