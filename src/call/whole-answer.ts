import type { Delta } from "../core/delta.js";
import { GatewayError } from "../core/errors.js";
import type { Heartbeat } from "../core/heartbeats.js";
import type { Numbered } from "../resume/resumable-streams.js";

/**
 * What a delta adds to an answer folded in memory, in bytes (UTF-8 of its
 * text, a flat allowance for the rest): the bound's measure, not a size to
 * allocate by.
 */
export function foldedBytes(delta: Delta): number {
  switch (delta.type) {
    case "text":
    case "reasoning":
      return Buffer.byteLength(delta.text, "utf8") + (delta.type === "reasoning" ? 64 : 0);
    case "tool_call":
      return Buffer.byteLength(delta.arguments, "utf8") + (delta.name?.length ?? 0) + 64;
    case "logprobs":
      return 64 * delta.tokens.length;
    default:
      return 64;
  }
}

/** The refusal of an answer past `limits.maxAnswerBytes`: the caller asked to have it whole, and it would not fit. */
export function answerTooLarge(maxBytes: number): GatewayError {
  return new GatewayError("upstream_protocol", `the answer grew past limits.maxAnswerBytes (${maxBytes} bytes) before it ended; the upstream request was closed. Ask for a streamed answer, or a smaller max_tokens`);
}

/**
 * A plain call's deltas for an edge that answers with one whole message
 * (its calls ask for no heartbeats and are never resumable), each shown to
 * `observe` first, bounded: past `maxBytes` the upstream is closed (the
 * pipeline is told why, so the call is recorded as failed) and the edge
 * gets `upstream_protocol` (502) instead of a truncated answer or an
 * unbounded string.
 */
export async function* wholeAnswer(items: AsyncIterable<Delta | Numbered | Heartbeat>, maxBytes: number, observe?: (delta: Delta) => void): AsyncGenerator<Delta, void, undefined> {
  const iterator = items[Symbol.asyncIterator]();
  let bytes = 0;
  let done = false;
  try {
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      const item = next.value;
      if ("sequence" in item || item.type === "heartbeat") continue;
      bytes += foldedBytes(item);
      if (bytes > maxBytes) {
        const error = answerTooLarge(maxBytes);
        done = true;
        await iterator.throw?.(error).catch(() => undefined);
        throw error;
      }
      observe?.(item);
      yield item;
    }
    done = true;
  } finally {
    // The consumer stopped early (its own failure): the pipeline cleans up.
    if (!done) await iterator.return?.().catch(() => undefined);
  }
}
