import type { ChatRequest } from "../core/chat-request.js";
import type { ContentDelta, Usage, UsageDelta } from "../core/delta.js";
import { pooledCounter } from "./pooled-count.js";
import { countedInputTokens } from "./prompt-size.js";

/** A stream's usage, and whether the gateway counted it because the provider did not say. */
export interface MeteredUsage extends Usage {
  readonly estimated: boolean;
}

/**
 * Watches one stream's deltas so that its usage is known however it ends:
 * the provider's usage when it sent one; otherwise the gateway counts the
 * prompt and what the upstream produced with a tokenizer and marks the
 * result estimated (a real answer is never charged as zero); nothing when
 * the upstream produced nothing.
 */
export interface UsageMeter {
  observe(delta: ContentDelta): void;
  /** True once the upstream produced a first delta (an attempt committed). */
  readonly produced: boolean;
  /** Milliseconds from the meter's creation (the request's start) to the first delta. */
  readonly ttftMs: number | undefined;
  /** True when the stream produced output but the provider reported no usage: `estimateIfMissing` has work to do. */
  readonly missingUsage: boolean;
  /** At `finish`: the estimated usage delta to send first when the provider sent none. */
  estimateIfMissing(): Promise<UsageDelta | undefined>;
  /** The stream's usage so far (at its end: its usage). */
  final(): Promise<MeteredUsage>;
}

/**
 * Output text kept per stream for counting, should the provider report no
 * usage; past it only characters are counted, and converted at the rate
 * measured on the kept part. Bounded so that many long streams cannot pin
 * their whole answers in memory (the provider's usage, the common case,
 * makes the kept text unnecessary).
 */
export const MAX_KEPT_CHARS = 65_536;

const NONE: MeteredUsage = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0, estimated: false };

/** `request` may be a function: read when the meter counts, so a request the stages rewrote after the meter started is counted as sent. */
export function createUsageMeter(request: ChatRequest | (() => ChatRequest)): UsageMeter {
  const startedAt = performance.now();
  let ttftMs: number | undefined;
  let reported: MeteredUsage | undefined;
  const output: string[] = [];
  let reasoningChars = 0;
  let keptChars = 0;
  let overflowChars = 0;

  const keep = (text: string) => {
    if (keptChars + text.length <= MAX_KEPT_CHARS) {
      output.push(text);
      keptChars += text.length;
    } else overflowChars += text.length;
  };

  const counted = async (): Promise<MeteredUsage> => {
    const input = await countedInputTokens(typeof request === "function" ? request() : request);
    const kept = output.join("");
    const count = await pooledCounter([kept]);
    const keptTokens = count(kept);
    const rate = keptTokens > 0 ? kept.length / keptTokens : 4;
    const outputTokens = keptTokens + Math.ceil(overflowChars / rate);
    // Reasoning is part of output; its share estimated by characters.
    const reasoningTokens = kept.length + overflowChars > 0 ? Math.round((outputTokens * reasoningChars) / (kept.length + overflowChars)) : 0;
    return { inputTokens: input, outputTokens, cachedInputTokens: 0, reasoningTokens, estimated: true };
  };

  return {
    observe(delta) {
      ttftMs ??= performance.now() - startedAt;
      switch (delta.type) {
        case "usage":
          // Input counts sent early are not the usage: the whole one follows (or, if the stream is cut, the count does).
          if (delta.early) break;
          reported = {
            inputTokens: delta.inputTokens,
            outputTokens: delta.outputTokens,
            cachedInputTokens: delta.cachedInputTokens,
            reasoningTokens: delta.reasoningTokens,
            ...(delta.cacheWrite5mTokens ? { cacheWrite5mTokens: delta.cacheWrite5mTokens } : {}),
            ...(delta.cacheWrite1hTokens ? { cacheWrite1hTokens: delta.cacheWrite1hTokens } : {}),
            ...(delta.webSearches ? { webSearches: delta.webSearches } : {}),
            ...(delta.requests !== undefined && delta.requests !== 1 ? { requests: delta.requests } : {}),
            estimated: delta.estimated === true,
          };
          break;
        case "text":
          if (!reported) keep(delta.text);
          break;
        case "reasoning":
          if (!reported) {
            keep(delta.text);
            reasoningChars += delta.text.length;
          }
          break;
        case "tool_call":
          if (!reported) {
            if (delta.name) keep(delta.name);
            keep(delta.arguments);
          }
          break;
        default:
          break;
      }
    },
    get produced() {
      return ttftMs !== undefined;
    },
    get ttftMs() {
      return ttftMs;
    },
    get missingUsage() {
      return reported === undefined && ttftMs !== undefined;
    },
    async estimateIfMissing() {
      if (reported || ttftMs === undefined) return undefined;
      const usage = await counted();
      reported = usage;
      return { type: "usage", ...usage };
    },
    async final() {
      if (reported) return reported;
      if (ttftMs === undefined) return NONE;
      return counted();
    },
  };
}
