import { create } from "@bufbuild/protobuf";
import type { ChatResult } from "../../core/aggregate.js";
import type { Delta, FinishReason, Usage } from "../../core/delta.js";
import type { Heartbeat } from "../../core/heartbeats.js";
import { ToolCallSchema } from "../../../gen/sluice/v1/chat_pb.js";
import {
  type ChatResponse,
  ChatResponseSchema,
  type StreamChatResponse,
  StreamChatResponseSchema,
} from "../../../gen/sluice/v1/chat_service_pb.js";
import { FinishReason as ProtoFinishReason, type Usage as ProtoUsage, UsageSchema } from "../../../gen/sluice/v1/delta_pb.js";

const FINISH: Record<FinishReason, ProtoFinishReason> = {
  stop: ProtoFinishReason.STOP,
  length: ProtoFinishReason.LENGTH,
  tool_calls: ProtoFinishReason.TOOL_CALLS,
  content_filter: ProtoFinishReason.CONTENT_FILTER,
  other: ProtoFinishReason.OTHER,
  unspecified: ProtoFinishReason.UNSPECIFIED,
};

function usage(u: Usage): ProtoUsage {
  return create(UsageSchema, {
    inputTokens: BigInt(u.inputTokens),
    outputTokens: BigInt(u.outputTokens),
    cachedInputTokens: BigInt(u.cachedInputTokens),
    reasoningTokens: BigInt(u.reasoningTokens),
  });
}

/** The protobuf edge's only delta conversion. */
export function deltaToProto(delta: Delta | Heartbeat, sequence: bigint): StreamChatResponse {
  switch (delta.type) {
    case "heartbeat":
      return create(StreamChatResponseSchema, { sequence, delta: { case: "heartbeat", value: {} } });
    case "start":
      return create(StreamChatResponseSchema, {
        sequence,
        delta: { case: "start", value: { responseId: delta.responseId, provider: delta.provider, model: delta.model } },
      });
    case "text":
      return create(StreamChatResponseSchema, { sequence, delta: { case: "text", value: { text: delta.text } } });
    case "reasoning":
      return create(StreamChatResponseSchema, { sequence, delta: { case: "reasoning", value: { text: delta.text } } });
    case "tool_call":
      return create(StreamChatResponseSchema, {
        sequence,
        delta: {
          case: "toolCall",
          value: { index: delta.index, id: delta.id ?? "", name: delta.name ?? "", arguments: delta.arguments },
        },
      });
    case "usage":
      return create(StreamChatResponseSchema, { sequence, delta: { case: "usage", value: usage(delta) } });
    case "finish":
      return create(StreamChatResponseSchema, { sequence, delta: { case: "finish", value: { reason: FINISH[delta.reason] } } });
  }
}

export function resultToProto(result: ChatResult): ChatResponse {
  return create(ChatResponseSchema, {
    responseId: result.responseId,
    provider: result.provider,
    model: result.model,
    text: result.text,
    reasoning: result.reasoning,
    toolCalls: result.toolCalls.map((c) => create(ToolCallSchema, c)),
    ...(result.usage ? { usage: usage(result.usage) } : {}),
    finishReason: FINISH[result.finishReason],
  });
}
