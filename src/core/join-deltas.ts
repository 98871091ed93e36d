import type { Delta, ReasoningDelta, TextDelta } from "./delta.js";
import type { DeltaSink } from "./delta-sink.js";

type Joinable = TextDelta | ReasoningDelta;

/**
 * Text joins text; reasoning joins reasoning that carries neither a
 * signature nor redacted data (those mark block boundaries a client must
 * see where the provider put them). Everything else stays a delta of its
 * own: logprobs belong to the text delta before them, tool-call fragments
 * keep their index.
 */
function joinable(item: unknown): item is Joinable {
  const delta = item as Delta;
  return delta.type === "text" || (delta.type === "reasoning" && delta.signature === undefined && delta.redactedData === undefined);
}

/**
 * A joined message stops growing at this many UTF-16 units of text (16-48
 * KiB as UTF-8): a slow client's stream then holds at most one such message
 * beyond what it held with one message per delta, and no upstream read,
 * however large, becomes one unbounded message.
 */
export const MAX_JOINED_CHARS = 16_384;

/** The first item that could not be joined, or the source's end: what the caller handles next. */
export interface Joined<T> {
  readonly item: Delta | T;
  readonly after?: IteratorResult<Delta | T, void>;
}

/**
 * `item` joined with the deltas after it that are already decoded
 * (`buffered()` > 0: pulling them waits for no I/O) and of its own kind,
 * their texts concatenated in order. Nothing waits for a timer or for the
 * network: a client that keeps up gets the deltas one by one, a client
 * that is behind gets what piled up in fewer, larger messages, and the
 * concatenated text is the same either way. Per-message costs (framing,
 * encoding, a write) are what a delta costs at the edge, so this is the
 * cheapest delta.
 */
export async function joinBuffered<T>(item: Delta | T, next: () => Promise<IteratorResult<Delta | T, void>>, buffered: () => number): Promise<Joined<T>> {
  if (!joinable(item) || buffered() === 0 || item.text.length >= MAX_JOINED_CHARS) return { item };
  let text = item.text;
  for (;;) {
    const following = await next();
    if (following.done !== true && joinable(following.value) && following.value.type === item.type) {
      text += following.value.text;
      if (buffered() > 0 && text.length < MAX_JOINED_CHARS) continue;
      return { item: { ...item, text } };
    }
    return { item: { ...item, text }, after: following };
  }
}

/**
 * The pushed form of joinBuffered: a text or reasoning delta with `more`
 * (the rest of its upstream read follows at once) waits for the deltas
 * after it, and those of its kind join it, until one that does not, the
 * end of the read, or MAX_JOINED_CHARS. Nothing waits beyond the read in
 * hand, so the result is the same messages joinBuffered makes.
 */
export function joiningSink<T>(sink: DeltaSink<Delta | T>): DeltaSink<Delta | T> {
  let pending: Joinable | undefined;
  let text = "";
  const flush = (): boolean => {
    if (!pending) return true;
    const item: Joinable = text === pending.text ? pending : { ...pending, text };
    pending = undefined;
    return sink.push(item, false);
  };
  const start = (item: Delta | T, more: boolean): boolean => {
    if (more && joinable(item) && item.text.length < MAX_JOINED_CHARS) {
      pending = item;
      text = item.text;
      return true;
    }
    return sink.push(item, more);
  };
  return {
    push(item, more) {
      if (!pending) return start(item, more);
      if (joinable(item) && item.type === pending.type) {
        text += item.text;
        return more && text.length < MAX_JOINED_CHARS ? true : flush();
      }
      const credit = flush();
      return start(item, more) && credit;
    },
    end(error) {
      flush();
      sink.end(error);
    },
  };
}
