import { EventStreamCodec } from "@smithy/eventstream-codec";
import { fromUtf8, toUtf8 } from "@smithy/util-utf8";
import { GatewayError } from "../../core/errors.js";
import type { SseDecoder, SseDecoderOptions, SseEvent } from "../../sse/decoder.js";
import type { StreamFraming } from "../provider.js";

/** The prelude (total and header lengths, prelude CRC) and the message CRC: the smallest message. */
const OVERHEAD = 16;

function header(message: ReturnType<EventStreamCodec["decode"]>, name: string): string | undefined {
  const h = message.headers[name];
  return h?.type === "string" ? h.value : undefined;
}

/**
 * AWS event-stream bytes → the events a translator reads. The length prefix
 * is checked against the maximum event size before anything is kept, and
 * the codec (the AWS SDK's own) checks both CRCs and parses the headers.
 * An event's name is its `:event-type` (`contentBlockDelta`), an
 * exception's its `:exception-type` (`throttlingException`), as the
 * payload names neither.
 */
export function createEventStreamDecoder(options: SseDecoderOptions): SseDecoder {
  const codec = new EventStreamCodec(toUtf8, fromUtf8);
  const who = options.source === undefined ? "upstream" : `provider ${options.source}`;
  const details = options.source === undefined ? {} : { provider: options.source };
  let pending: Buffer = Buffer.alloc(0);
  /** A broken message after good ones in the same chunk: the good ones go out first, the error with the next call. */
  let failure: GatewayError | undefined;

  function next(): SseEvent | undefined {
    const length = pending.readUInt32BE(0);
    if (length > options.maxEventSize) {
      throw new GatewayError("upstream_protocol", `${who} sent an event larger than the maximum event size of ${options.maxEventSize} bytes (limits.maxEventBytes)`, details);
    }
    if (length < OVERHEAD) throw new GatewayError("upstream_protocol", `${who} sent a malformed event-stream message`, details);
    if (pending.length < length) return undefined;
    let message: ReturnType<EventStreamCodec["decode"]>;
    try {
      message = codec.decode(pending.subarray(0, length));
    } catch (cause) {
      throw new GatewayError("upstream_protocol", `${who} sent a malformed event-stream message`, { ...details, cause });
    }
    pending = pending.subarray(length);
    const type = header(message, ":message-type");
    const event = type === "exception" ? header(message, ":exception-type") : type === "error" ? header(message, ":error-code") : header(message, ":event-type");
    return { event: event ?? "", data: toUtf8(message.body) };
  }

  return {
    push(chunk) {
      if (failure) throw failure;
      pending = pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([pending, chunk]);
      const events: SseEvent[] = [];
      try {
        for (let e = pending.length >= 4 ? next() : undefined; e; e = pending.length >= 4 ? next() : undefined) events.push(e);
      } catch (error) {
        if (events.length === 0 || !(error instanceof GatewayError)) throw error;
        failure = error;
      }
      return events;
    },
    end() {
      if (failure) throw failure;
      // A message cut short is not a message (as an SSE event without its blank line).
      pending = Buffer.alloc(0);
      return [];
    },
  };
}

/** Bedrock's streaming responses: `application/vnd.amazon.eventstream`. */
export const eventStreamFraming: StreamFraming = {
  accepts(headers) {
    const type = headers["content-type"];
    return typeof type === "string" && type.toLowerCase().startsWith("application/vnd.amazon.eventstream");
  },
  createDecoder: createEventStreamDecoder,
};
