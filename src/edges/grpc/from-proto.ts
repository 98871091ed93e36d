import type { JsonObject } from "@bufbuild/protobuf";
import type {
  ChatMessage,
  ChatRequest,
  ContentPart,
  Role,
  ToolChoice,
} from "../../core/chat-request.js";
import { GatewayError } from "../../core/errors.js";
import { validateChatRequest } from "../../core/validate.js";
import {
  ImageDetail,
  type Message,
  Role as ProtoRole,
  type ToolChoice as ProtoToolChoice,
  ToolChoiceMode,
} from "../../../gen/sluice/v1/chat_pb.js";
import type { StreamChatRequest } from "../../../gen/sluice/v1/chat_service_pb.js";

/** StreamChatRequest and ChatRequest share every field; either converts. */
export type ProtoChatRequest = Omit<StreamChatRequest, "$typeName">;

function invalid(field: string, problem: string): never {
  throw new GatewayError("invalid_request", `${field}: ${problem}`, { field });
}

function role(value: ProtoRole, at: string): Role {
  switch (value) {
    case ProtoRole.SYSTEM:
      return "system";
    case ProtoRole.USER:
      return "user";
    case ProtoRole.ASSISTANT:
      return "assistant";
    case ProtoRole.TOOL:
      return "tool";
    default:
      return invalid(`${at}.role`, "must be set to SYSTEM, USER, ASSISTANT or TOOL");
  }
}

const DETAIL = { [ImageDetail.AUTO]: "auto", [ImageDetail.LOW]: "low", [ImageDetail.HIGH]: "high" } as const;

function part(p: Message["content"][number], at: string): ContentPart {
  switch (p.part.case) {
    case "text":
      return { type: "text", text: p.part.value };
    case "imageUrl": {
      const detail = DETAIL[p.part.value.detail as keyof typeof DETAIL];
      return { type: "image_url", url: p.part.value.url, ...(detail ? { detail } : {}) };
    }
    default:
      return invalid(at, "content part must set text or image_url");
  }
}

function message(m: Message, i: number): ChatMessage {
  const at = `messages[${i}]`;
  return {
    role: role(m.role, at),
    content: m.content.map((p, j) => part(p, `${at}.content[${j}]`)),
    ...(m.toolCallId ? { toolCallId: m.toolCallId } : {}),
    ...(m.toolCalls.length > 0 ? { toolCalls: m.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })) } : {}),
    ...(m.name ? { name: m.name } : {}),
  };
}

function toolChoice(choice: ProtoToolChoice | undefined): ToolChoice | undefined {
  switch (choice?.choice.case) {
    case "mode":
      switch (choice.choice.value) {
        case ToolChoiceMode.AUTO:
          return { type: "auto" };
        case ToolChoiceMode.NONE:
          return { type: "none" };
        case ToolChoiceMode.REQUIRED:
          return { type: "required" };
        default:
          return undefined;
      }
    case "functionName":
      return { type: "function", name: choice.choice.value };
    default:
      return undefined;
  }
}

const EMPTY_SCHEMA: JsonObject = { type: "object", properties: {} };
const MAX_SEED = BigInt(Number.MAX_SAFE_INTEGER);

/** The protobuf request as a validated canonical request; INVALID_ARGUMENT naming the field otherwise. */
export function chatRequestFromProto(req: ProtoChatRequest, maxJsonDepth?: number): ChatRequest {
  const s = req.sampling;
  if (s?.seed !== undefined && (s.seed > MAX_SEED || s.seed < -MAX_SEED)) invalid("sampling.seed", "out of range");
  const choice = toolChoice(req.toolChoice);
  return validateChatRequest({
    model: req.model,
    messages: req.messages.map(message),
    tools: req.tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters ?? EMPTY_SCHEMA })),
    ...(choice ? { toolChoice: choice } : {}),
    sampling: {
      ...(s?.temperature === undefined ? {} : { temperature: s.temperature }),
      ...(s?.topP === undefined ? {} : { topP: s.topP }),
      ...(s?.maxTokens === undefined ? {} : { maxTokens: s.maxTokens }),
      stop: s?.stop ?? [],
      ...(s?.seed === undefined ? {} : { seed: Number(s.seed) }),
    },
    metadata: {
      ...(req.metadata?.userId ? { userId: req.metadata.userId } : {}),
      ...(req.metadata?.sessionId ? { sessionId: req.metadata.sessionId } : {}),
      labels: req.metadata?.labels ?? {},
    },
  }, maxJsonDepth);
}
