import type { JsonObject } from "@bufbuild/protobuf";
import {
  ImageDetail,
  type Message,
  ReasoningEffort as ProtoEffort,
  type Reasoning as ProtoReasoning,
  type ResponseFormat as ProtoResponseFormat,
  Role as ProtoRole,
  ServiceTier as ProtoServiceTier,
  type ToolChoice as ProtoToolChoice,
  ResponseFormatType,
  ToolChoiceMode,
} from "../../../gen/sluice/v1/chat_pb.js";
import type { StreamChatRequest } from "../../../gen/sluice/v1/chat_service_pb.js";
import type { GatewayToolServer, GatewayToolsRequest } from "../../call/gateway-tool-loop.js";
import type { ChatMessage, ChatRequest, ContentPart, ProviderKind, ReasoningEffort, ReasoningOptions, ResponseFormat, Role, ServiceTier, ToolChoice } from "../../core/chat-request.js";
import { quoteClientValue } from "../../core/client-text.js";
import { GatewayError } from "../../core/errors.js";
import { validateChatRequest } from "../../core/validate.js";

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
    case "reasoning": {
      const r = p.part.value;
      return {
        type: "reasoning",
        text: r.text,
        ...(r.signature ? { signature: r.signature } : {}),
        ...(r.redactedData ? { redactedData: r.redactedData } : {}),
      };
    }
    default:
      return invalid(at, "content part must set text, image_url or reasoning");
  }
}

function message(m: Message, i: number): ChatMessage {
  const at = `messages[${i}]`;
  return {
    role: role(m.role, at),
    content: m.content.map((p, j) => part(p, `${at}.content[${j}]`)),
    ...(m.toolCallId ? { toolCallId: m.toolCallId } : {}),
    ...(m.toolCalls.length > 0 ? { toolCalls: m.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments, ...(c.signature ? { signature: c.signature } : {}) })) } : {}),
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

function responseFormat(format: ProtoResponseFormat | undefined): ResponseFormat | undefined {
  if (!format) return undefined;
  const schema = format.jsonSchema;
  if (format.type !== ResponseFormatType.JSON_SCHEMA && schema) invalid("response_format.json_schema", "only with type JSON_SCHEMA");
  switch (format.type) {
    case ResponseFormatType.TEXT:
      return { type: "text" };
    case ResponseFormatType.JSON_OBJECT:
      return { type: "json_object" };
    case ResponseFormatType.JSON_SCHEMA:
      if (!schema?.schema) invalid("response_format.json_schema.schema", "is required for type JSON_SCHEMA");
      return {
        type: "json_schema",
        // OpenAI requires a name; callers of this contract need not invent one.
        name: schema.name || "response",
        ...(schema.description ? { description: schema.description } : {}),
        schema: schema.schema,
        ...(schema.strict === undefined ? {} : { strict: schema.strict }),
      };
    default:
      return undefined;
  }
}

const EFFORT: Partial<Record<ProtoEffort, ReasoningEffort>> = {
  [ProtoEffort.NONE]: "none",
  [ProtoEffort.MINIMAL]: "minimal",
  [ProtoEffort.LOW]: "low",
  [ProtoEffort.MEDIUM]: "medium",
  [ProtoEffort.HIGH]: "high",
  [ProtoEffort.XHIGH]: "xhigh",
};

function reasoning(r: ProtoReasoning | undefined): ReasoningOptions | undefined {
  if (!r) return undefined;
  const effort = EFFORT[r.effort];
  const out: ReasoningOptions = {
    ...(effort ? { effort } : {}),
    ...(r.budgetTokens === undefined ? {} : { budgetTokens: r.budgetTokens }),
    ...(r.includeReasoning === undefined ? {} : { includeReasoning: r.includeReasoning }),
  };
  return Object.keys(out).length > 0 ? out : undefined;
}

const SERVICE_TIER: Partial<Record<ProtoServiceTier, ServiceTier>> = {
  [ProtoServiceTier.AUTO]: "auto",
  [ProtoServiceTier.DEFAULT]: "default",
  [ProtoServiceTier.FLEX]: "flex",
  [ProtoServiceTier.PRIORITY]: "priority",
  [ProtoServiceTier.SCALE]: "scale",
};

const EMPTY_SCHEMA: JsonObject = { type: "object", properties: {} };
const MAX_SEED = BigInt(Number.MAX_SAFE_INTEGER);

/** The protobuf request as a validated canonical request; INVALID_ARGUMENT naming the field otherwise. */
export function chatRequestFromProto(req: ProtoChatRequest, maxJsonDepth?: number): ChatRequest {
  const s = req.sampling;
  if (s?.seed !== undefined && (s.seed > MAX_SEED || s.seed < -MAX_SEED)) invalid("sampling.seed", "out of range");
  const choice = toolChoice(req.toolChoice);
  if (req.topLogprobs !== undefined && !req.logprobs) invalid("top_logprobs", "requires logprobs");
  const format = responseFormat(req.responseFormat);
  const thinking = reasoning(req.reasoning);
  const tier = SERVICE_TIER[req.serviceTier];
  const bias = Object.entries(s?.logitBias ?? {});
  const providerMetadata = req.metadata?.providerMetadata ?? {};
  return validateChatRequest(
    {
      model: req.model,
      messages: req.messages.map(message),
      tools: req.tools.map((t) => ({
        name: t.name,
        description: t.description,
        parameters: t.parameters ?? EMPTY_SCHEMA,
        ...(t.strict === undefined ? {} : { strict: t.strict }),
      })),
      ...(choice ? { toolChoice: choice } : {}),
      sampling: {
        ...(s?.temperature === undefined ? {} : { temperature: s.temperature }),
        ...(s?.topP === undefined ? {} : { topP: s.topP }),
        ...(s?.maxTokens === undefined ? {} : { maxTokens: s.maxTokens }),
        stop: s?.stop ?? [],
        ...(s?.seed === undefined ? {} : { seed: Number(s.seed) }),
        ...(s?.presencePenalty === undefined ? {} : { presencePenalty: s.presencePenalty }),
        ...(s?.frequencyPenalty === undefined ? {} : { frequencyPenalty: s.frequencyPenalty }),
        ...(bias.length > 0 ? { logitBias: Object.fromEntries(bias) } : {}),
      },
      metadata: {
        ...(req.metadata?.userId ? { userId: req.metadata.userId } : {}),
        ...(req.metadata?.sessionId ? { sessionId: req.metadata.sessionId } : {}),
        labels: req.metadata?.labels ?? {},
        ...(Object.keys(providerMetadata).length > 0 ? { providerMetadata } : {}),
      },
      ...(format ? { responseFormat: format } : {}),
      ...(thinking ? { reasoning: thinking } : {}),
      ...(req.logprobs ? { logprobs: req.topLogprobs === undefined ? {} : { topLogprobs: req.topLogprobs } } : {}),
      ...(req.parallelToolCalls === undefined ? {} : { parallelToolCalls: req.parallelToolCalls }),
      ...(tier ? { serviceTier: tier } : {}),
      ...(Object.keys(req.providerOptions).length > 0 ? { providerOptions: req.providerOptions as Partial<Record<ProviderKind, JsonObject>> } : {}),
    },
    maxJsonDepth,
  );
}

/**
 * The request's `mcp_servers`: the servers whose tools the gateway runs
 * for it (call/gateway-tool-loop.ts); absent when it names none. An empty
 * `allowed_tools` is every granted tool (proto3 has no absent list).
 */
export function gatewayToolsFromProto(req: Pick<ProtoChatRequest, "mcpServers">): GatewayToolsRequest | undefined {
  if (req.mcpServers.length === 0) return undefined;
  const servers = req.mcpServers.map((s, i): GatewayToolServer => {
    const field = `mcp_servers[${i}].server`;
    if (s.server === "") invalid(field, "must name a server of the gateway's mcp.servers");
    if (req.mcpServers.findIndex((o) => o.server === s.server) !== i) invalid(field, `${quoteClientValue(s.server, 64)} is named twice`);
    return { server: s.server, field, ...(s.allowedTools.length > 0 ? { allowedTools: s.allowedTools } : {}) };
  });
  return { servers, via: "grpc" };
}
