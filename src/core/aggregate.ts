import type { ReasoningPart, ToolCall } from "./chat-request.js";
import type { Delta, FinishReason, TokenLogprob, Usage } from "./delta.js";
import { createReasoningCollector } from "./reasoning-parts.js";

/** A whole answer, for non-streaming edges. */
export interface ChatResult {
  responseId: string;
  provider: string;
  model: string;
  text: string;
  reasoning: string;
  /** The reasoning as blocks with their signatures, for replaying the turn. */
  reasoningParts: ReasoningPart[];
  toolCalls: ToolCall[];
  logprobs: TokenLogprob[];
  droppedParams: readonly string[];
  usage?: Usage;
  finishReason: FinishReason;
  /** The stop sequence that ended the answer, when the provider said which. */
  stopSequence?: string;
}

/**
 * Folds a delta stream into one answer. Tool-call fragments join by index, so
 * non-streaming callers get exactly what a streaming client would assemble.
 */
export async function aggregateDeltas(deltas: AsyncIterable<Delta>): Promise<ChatResult> {
  const result: ChatResult = {
    responseId: "",
    provider: "",
    model: "",
    text: "",
    reasoning: "",
    reasoningParts: [],
    toolCalls: [],
    logprobs: [],
    droppedParams: [],
    finishReason: "unspecified",
  };
  const calls = new Map<number, { id: string; name: string; arguments: string; signature?: string }>();
  const reasoning = createReasoningCollector();
  for await (const delta of deltas) {
    switch (delta.type) {
      case "start":
        result.responseId = delta.responseId;
        result.provider = delta.provider;
        result.model = delta.model;
        result.droppedParams = delta.droppedParams ?? [];
        break;
      case "text":
        result.text += delta.text;
        reasoning.interrupt();
        break;
      case "reasoning":
        result.reasoning += delta.text;
        reasoning.add(delta);
        break;
      case "tool_call": {
        const call = calls.get(delta.index) ?? { id: "", name: "", arguments: "" };
        if (delta.id) call.id = delta.id;
        if (delta.name) call.name = delta.name;
        if (delta.signature) call.signature = delta.signature;
        call.arguments += delta.arguments;
        calls.set(delta.index, call);
        reasoning.interrupt();
        break;
      }
      case "logprobs":
        result.logprobs.push(...delta.tokens);
        break;
      case "usage": {
        const { type: _type, ...usage } = delta;
        result.usage = usage;
        break;
      }
      case "finish":
        result.finishReason = delta.reason;
        if (delta.stopSequence !== undefined) result.stopSequence = delta.stopSequence;
        break;
    }
  }
  result.toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
  result.reasoningParts = reasoning.parts();
  return result;
}
