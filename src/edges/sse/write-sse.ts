import { type CallItem, DROPPED_PARAMS_HEADER, deltaOf } from "../../call/call-layer.js";
import type { Delta } from "../../core/delta.js";
import { type DeltaSink, type Feed, pushFrom } from "../../core/delta-sink.js";
import { type GatewayError, toGatewayError } from "../../core/errors.js";
import type { Heartbeat } from "../../core/heartbeats.js";
import { createByteBatch } from "../../http/byte-batch.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyResponse, writeChunk } from "../../http/node-http.js";
import { writable } from "../../http/writable.js";
import type { Numbered } from "../../resume/resumable-streams.js";

/** SSE comment sent when a resumable stream stops being resumable; the gRPC edge sends the same as a trailer. */
const NOT_RESUMABLE_COMMENT = ": sluice-resumable: false\n\n";

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
};

/** What an SSE edge (Chat Completions, Messages, Responses) says in its own words; the writer owns the order and the bytes. */
export interface SseCodec {
  /** A delta's events, in parts (the edge's per-request encoder). */
  events(delta: Delta, push: (part: string | Uint8Array) => void): void;
  /** A resumable stream's delta: its events with the sequence on the `id:` line of the last one (EventSource's Last-Event-ID). */
  numbered?(item: Numbered, push: (part: string) => void): void;
  /** The response's headers when they are not SSE's (the Gemini edge's JSON-array stream). */
  readonly headers?: Readonly<Record<string, string>>;
  /** What a heartbeat is on this wire (a comment, Anthropic's `ping` event). */
  readonly heartbeat: string;
  /** Parameters the target's alias dropped, in this wire's names, for the header. */
  dropped(params: readonly string[]): readonly string[];
  /** Written after the last delta (OpenAI's `data: [DONE]`), if anything. */
  end(push: (part: string) => void): void;
  /** The failure as events, once the headers are out: the client's SDK must raise, not take a truncated answer as whole. */
  failure(error: GatewayError, push: (part: string) => void): void;
  /** The failure as a plain HTTP error, while no byte of the stream is out. */
  refuse(res: AnyResponse, exchange: Exchange, error: unknown, headers: Readonly<Record<string, string>>): void;
}

export interface SseSource {
  readonly items: AsyncIterable<CallItem>;
  /** The items pushed under the writer's credit (CallStream.relay); without it the writer pulls `items`. */
  readonly relay?: (sink: DeltaSink<CallItem>) => Feed;
  /** Headers from the call layer (the key's quota); read when the headers are committed or the call is refused. */
  readonly quota: () => Readonly<Record<string, string>>;
  readonly buffered?: () => number;
  readonly takeNotResumable?: () => boolean;
  readonly observe?: (delta: Delta) => void;
}

/**
 * Writes a call's items as SSE. Headers are committed with the first
 * delta or the first heartbeat, whichever comes first: until then a
 * failure is a plain HTTP error with the right status; after it, the
 * codec's failure events. Events of deltas decoded from one upstream read
 * go out in one write; when the socket's buffer is full the call is told
 * to pause until it drains (bounded by `sendTimeoutMs`): the client's pace
 * is the upstream's. Items are pushed into the writer (no generator per
 * delta between the upstream read and the socket).
 */
export function writeSse(
  res: AnyResponse,
  exchange: Exchange,
  source: SseSource,
  codec: SseCodec,
  options: {
    readonly sendTimeoutMs: number;
    readonly beforeEnd?: () => Promise<void>;
    /** Request fields the edge did not act on (its wire's names), said with the target's in one header. */
    readonly droppedParams?: readonly string[];
  },
): Promise<void> {
  let committed = false;
  const droppedValue = (target: readonly string[] | undefined): string | undefined => {
    const all = new Set([...(options.droppedParams ?? []), ...(target?.length ? codec.dropped(target) : [])]);
    return all.size > 0 ? [...all].join(",") : undefined;
  };
  const writeHead = (targetDropped: readonly string[] | undefined) => {
    const dropped = droppedValue(targetDropped);
    res.writeHead(200, { ...(codec.headers ?? SSE_HEADERS), ...source.quota(), ...(dropped ? { [DROPPED_PARAMS_HEADER]: dropped } : {}) });
    committed = true;
  };
  const batch = createByteBatch();
  const push = (part: string | Uint8Array) => batch.push(part);

  return new Promise<void>((resolve) => {
    let feed: Feed | undefined;
    let waiting = false;
    let ended = false;
    /** Writes what is batched; false (and a resume once the socket drains) when the client's buffer is full. */
    const flush = (): boolean => {
      if (batch.empty) return !waiting;
      if (writeChunk(res, batch.take()) && !waiting) return true;
      if (waiting) return false;
      waiting = true;
      writable(res, exchange, options.sendTimeoutMs).then(
        () => {
          waiting = false;
          feed?.resume();
        },
        (error: unknown) => feed?.cancel(toGatewayError(error)),
      );
      return false;
    };
    const close = async (error: GatewayError | undefined) => {
      try {
        if (error) throw error;
        // Before the end: a client may send its next turn the moment it sees it.
        await options.beforeEnd?.();
        exchange.code = "ok";
        if (!committed) writeHead(undefined);
        codec.end(push);
        if (batch.empty) res.end();
        else res.end(batch.take());
      } catch (failure) {
        if (exchange.signal.aborted) return;
        if (!committed) return codec.refuse(res, exchange, failure, source.quota());
        const gatewayError = toGatewayError(failure);
        exchange.code = gatewayError.code;
        codec.failure(gatewayError, push);
        res.end(batch.take());
      }
    };
    const sink: DeltaSink<CallItem> = {
      push(item, more) {
        if (ended) return false;
        const delta: Delta | Heartbeat = deltaOf(item);
        const targetDropped = delta.type === "start" ? delta.droppedParams : undefined;
        if (!committed) writeHead(targetDropped);
        else if (targetDropped && targetDropped.length > 0) {
          // A heartbeat already sent the headers: say the whole list in a comment line instead.
          push(`: ${DROPPED_PARAMS_HEADER}: ${droppedValue(targetDropped)}\n\n`);
        }
        if (source.takeNotResumable?.()) push(NOT_RESUMABLE_COMMENT);
        if (delta.type === "heartbeat") push(codec.heartbeat);
        else if ("sequence" in item && codec.numbered) codec.numbered(item, push);
        else {
          if (!("sequence" in item)) source.observe?.(delta);
          codec.events(delta, push);
        }
        // The next delta is already decoded: it joins this write, so nothing waits for it.
        if (more && delta.type !== "heartbeat") return !waiting;
        return flush();
      },
      end(error) {
        if (ended) return;
        ended = true;
        void close(error).then(resolve);
      },
    };
    feed = source.relay ? source.relay(sink) : pushFrom(source.items[Symbol.asyncIterator](), sink, source.buffered);
  });
}
