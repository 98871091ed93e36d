import type { Price } from "../config/config.js";
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
  /** The answer so far, priced with the target's price. */
  summary(price: Price | undefined): AnswerSummary;
}

export function createAnswerCapture(startedAt = performance.now(), now: () => number = () => performance.now()): AnswerCapture {
  let text = "";
  const calls = new Map<number, { name: string; arguments: string }>();
  let finishReason: FinishReason = "unspecified";
  let usage: Usage = NO_USAGE;
  let firstAt: number | undefined;
  let target = "";
  return {
    observe(delta) {
      switch (delta.type) {
        case "start":
          target = `${delta.provider}/${delta.model}`;
          break;
        case "text":
          firstAt ??= now();
          text += delta.text;
          break;
        case "tool_call": {
          firstAt ??= now();
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
