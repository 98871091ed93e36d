import type { Delta, FinishReason, Usage } from "./delta.js";
import type { ToolCall } from "./chat-request.js";

/** A whole answer, for non-streaming edges. */
export interface ChatResult {
  responseId: string;
  provider: string;
  model: string;
  text: string;
  reasoning: string;
  toolCalls: ToolCall[];
  usage?: Usage;
  finishReason: FinishReason;
}

/**
 * Folds a delta stream into one answer. Tool-call fragments join by index, so
 * non-streaming callers get exactly what a streaming client would assemble.
 */
export async function aggregateDeltas(deltas: AsyncIterable<Delta>): Promise<ChatResult> {
  const result: ChatResult = { responseId: "", provider: "", model: "", text: "", reasoning: "", toolCalls: [], finishReason: "unspecified" };
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  for await (const delta of deltas) {
    switch (delta.type) {
      case "start":
        result.responseId = delta.responseId;
        result.provider = delta.provider;
        result.model = delta.model;
        break;
      case "text":
        result.text += delta.text;
        break;
      case "reasoning":
        result.reasoning += delta.text;
        break;
      case "tool_call": {
        const call = calls.get(delta.index) ?? { id: "", name: "", arguments: "" };
        if (delta.id) call.id = delta.id;
        if (delta.name) call.name = delta.name;
        call.arguments += delta.arguments;
        calls.set(delta.index, call);
        break;
      }
      case "usage": {
        const { type: _type, ...usage } = delta;
        result.usage = usage;
        break;
      }
      case "finish":
        result.finishReason = delta.reason;
        break;
    }
  }
  result.toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
  return result;
}
