import type { ContentDelta, Usage } from "../core/delta.js";

/** A completed answer as the cache keeps it: its deltas (joined where they may be) and where it came from. */
export interface CachedAnswer {
  /** Content deltas from the first to `finish`, usage included. */
  readonly deltas: readonly ContentDelta[];
  readonly usage: Usage;
  /** The request that produced it (what a hit's start delta names). */
  readonly requestId: string;
  /** The target that produced it (`provider/model`, its provider and model): its price is what a hit saves. */
  readonly target: string;
  readonly provider: string;
  readonly model: string;
  /** Epoch milliseconds when it was stored. */
  readonly storedAt: number;
}

/** Where an answer came from: its request and the target that served it. */
export type Origin = Pick<CachedAnswer, "requestId" | "target" | "provider" | "model">;

/** Why a finished stream's answer is or is not stored. */
export type Storability = "stored" | "not_completed" | "tool_calls" | "too_large";

/**
 * Watches one stream's content deltas and keeps what a cache entry needs.
 * Consecutive text and unsigned reasoning fragments are joined as they come
 * (their boundaries carry no meaning), so an entry holds a few deltas
 * however many tokens the answer had; past `maxBytes` (UTF-8 bytes of its
 * text, a lower bound of the stored entry's size) it stops keeping anything
 * and the answer is not stored. The stored entry itself is measured again
 * once sealed (response-cache.ts).
 */
export interface AnswerCapture {
  observe(delta: ContentDelta): void;
  /** The entry, once the stream completed, or why there is none. */
  result(origin: Origin, now: number): { readonly answer?: CachedAnswer; readonly verdict: Storability };
}

export function createAnswerCapture(options: { readonly maxBytes: number; readonly toolCalls: boolean }): AnswerCapture {
  const deltas: ContentDelta[] = [];
  let bytes = 0;
  let tooLarge = false;
  let toolCalls = false;
  let usage: Usage | undefined;
  let finish: string | undefined;

  return {
    observe(delta) {
      if (tooLarge) return;
      switch (delta.type) {
        case "usage":
          usage = delta;
          break;
        case "finish":
          finish = delta.reason;
          break;
        case "tool_call":
          toolCalls = true;
          break;
        default:
          break;
      }
      // Bytes as stored (UTF-8), not characters: a bound in characters let entries three times its size through.
      const size = delta.type === "text" ? Buffer.byteLength(delta.text) : delta.type === "reasoning" ? Buffer.byteLength(delta.text) + 64 : delta.type === "tool_call" ? Buffer.byteLength(delta.arguments) + 64 : 64;
      bytes += size;
      if (bytes > options.maxBytes) {
        tooLarge = true;
        deltas.length = 0;
        return;
      }
      const last = deltas.at(-1);
      if (delta.type === "text" && last?.type === "text") deltas[deltas.length - 1] = { type: "text", text: last.text + delta.text };
      else if (delta.type === "reasoning" && last?.type === "reasoning" && !last.signature && !last.redactedData && !delta.redactedData) {
        deltas[deltas.length - 1] = { ...delta, text: last.text + delta.text };
      } else deltas.push(delta);
    },
    result(origin, now) {
      if (tooLarge) return { verdict: "too_large" };
      // An answer that calls tools ends with `tool_calls` (some providers say `stop`): complete either way, stored only where the alias allows it.
      const completed = finish === "stop" || (finish === "tool_calls" && toolCalls);
      if (!completed || !usage) return { verdict: "not_completed" };
      if (toolCalls && !options.toolCalls) return { verdict: "tool_calls" };
      return { verdict: "stored", answer: { deltas: [...deltas], usage, ...origin, storedAt: now } };
    },
  };
}

/** An entry as stored (JSON), and back; a value that does not read as an entry is a miss, never an error for the caller. */
export function encodeAnswer(answer: CachedAnswer): string {
  return JSON.stringify(answer);
}

export function decodeAnswer(text: string): CachedAnswer | undefined {
  try {
    const value = JSON.parse(text) as Partial<CachedAnswer>;
    const named = [value.requestId, value.target, value.provider, value.model].every((field) => typeof field === "string");
    if (!Array.isArray(value.deltas) || !named || typeof value.usage !== "object" || value.usage === null) return undefined;
    return value as CachedAnswer;
  } catch {
    return undefined;
  }
}
