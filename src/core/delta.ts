/**
 * The one vocabulary every provider adapter speaks and every edge consumes.
 * Adapters translate wire events into these; edges translate these into wire
 * messages. Nothing between the two ever sees a provider's or a client's
 * format, which is what lets any edge serve any provider.
 */
export type Delta =
  | StartDelta
  | TextDelta
  | ReasoningDelta
  | ToolCallDelta
  | UsageDelta
  | FinishDelta;

/** Opens every stream; produced by the pipeline, not by adapters. */
export interface StartDelta {
  readonly type: "start";
  readonly responseId: string;
  readonly provider: string;
  readonly model: string;
}

export interface TextDelta {
  readonly type: "text";
  readonly text: string;
}

export interface ReasoningDelta {
  readonly type: "reasoning";
  readonly text: string;
}

/**
 * A piece of a tool call. `id` and `name` come with the first piece of a call
 * (providers that send whole calls produce a single piece).
 */
export interface ToolCallDelta {
  readonly type: "tool_call";
  readonly index: number;
  readonly id?: string;
  readonly name?: string;
  readonly arguments: string;
}

export interface Usage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedInputTokens: number;
  readonly reasoningTokens: number;
}

export interface UsageDelta extends Usage {
  readonly type: "usage";
}

/** Closed list, mirrored by the protobuf enum and the OpenAI facade. */
export type FinishReason = "stop" | "length" | "tool_calls" | "content_filter" | "other" | "unspecified";

export interface FinishDelta {
  readonly type: "finish";
  readonly reason: FinishReason;
}

/** Deltas adapters may emit: `start` belongs to the pipeline. */
export type ContentDelta = Exclude<Delta, StartDelta>;
