import type { Price } from "../config/settings.js";
import type { Delta, FinishReason, Usage } from "../core/delta.js";
import { costMicros } from "../usage/cost.js";

/**
 * One call's answer as evaluation compares it: the text, the tool calls,
 * how it ended, what it used and cost, and how long it took. The same
 * shape for a recorded call (the baseline) and for its replay against a
 * candidate alias, so the report compares like with like.
 */
export interface AnswerSummary {
  readonly text: string;
  readonly toolCalls: ReadonlyArray<{ readonly name: string; readonly arguments: string }>;
  readonly finishReason: FinishReason;
  readonly usage: Usage;
  readonly costMicros: number;
  /** To the first text or tool-call delta; absent when there was none. */
  readonly ttftMs?: number;
  readonly durationMs: number;
  /** `provider/model` that answered. */
  readonly target: string;
}

const NO_USAGE: Usage = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 };

/** Folds deltas as they pass into an AnswerSummary; `observe` is cheap enough for the per-delta path of a sampled call. */
export interface AnswerCapture {
  observe(delta: Delta): void;
  /** True once the answer passed the capture's bound: what it held is let go, and it has no summary worth keeping. */
  readonly tooLarge: boolean;
  /** The answer so far, priced with the target's price. */
  summary(price: Price | undefined): AnswerSummary;
}

/**
 * `maxBytes` (limits.maxAnswerBytes) bounds the text and tool-call
 * arguments it keeps: past it everything kept is let go and `tooLarge`
 * says so, so an answer that never ends cannot take the heap.
 */
export function createAnswerCapture(startedAt = performance.now(), now: () => number = () => performance.now(), maxBytes = Number.POSITIVE_INFINITY): AnswerCapture {
  let text = "";
  let bytes = 0;
  let tooLarge = false;
  const calls = new Map<number, { name: string; arguments: string }>();
  let finishReason: FinishReason = "unspecified";
  let usage: Usage = NO_USAGE;
  let firstAt: number | undefined;
  let target = "";
  /** Counts what a delta adds; false once past the bound (everything kept let go). */
  const fits = (added: string): boolean => {
    if (tooLarge) return false;
    bytes += Buffer.byteLength(added, "utf8");
    if (bytes <= maxBytes) return true;
    tooLarge = true;
    text = "";
    calls.clear();
    return false;
  };
  return {
    get tooLarge() {
      return tooLarge;
    },
    observe(delta) {
      switch (delta.type) {
        case "start":
          target = `${delta.provider}/${delta.model}`;
          break;
        case "text":
          firstAt ??= now();
          if (fits(delta.text)) text += delta.text;
          break;
        case "tool_call": {
          firstAt ??= now();
          if (!fits(delta.arguments)) break;
          const call = calls.get(delta.index) ?? { name: "", arguments: "" };
          if (delta.name) call.name = delta.name;
          call.arguments += delta.arguments;
          calls.set(delta.index, call);
          break;
        }
        case "usage": {
          const { type: _type, ...rest } = delta;
          usage = rest;
          break;
        }
        case "finish":
          finishReason = delta.reason;
          break;
      }
    },
    summary(price) {
      return {
        text,
        toolCalls: [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call),
        finishReason,
        usage,
        costMicros: costMicros(usage, price),
        ...(firstAt === undefined ? {} : { ttftMs: firstAt - startedAt }),
        durationMs: now() - startedAt,
        target,
      };
    },
  };
}
