import { type ChatMessage, type ChatRequest, messageText, type ToolChoice } from "../../core/chat-request.js";
import { GatewayError } from "../../core/errors.js";
import { hasLogitBias, type OptionalParam } from "../../core/request-params.js";
import { anthropicRequestBody } from "../anthropic/anthropic-request.js";
import type { UpstreamRequest, UpstreamTarget } from "../provider.js";
import { withProviderOptions } from "../provider-options.js";
import { parseDataUrl, parseToolArguments } from "../tool-arguments.js";

type Json = Record<string, unknown>;

/** The image formats Converse takes, by media type. */
const IMAGE_FORMATS: Record<string, string> = { "image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif", "image/webp": "webp" };

/**
 * The Claude model id inside a Bedrock model id, an inference profile
 * (`us.anthropic.claude-…`, `global.anthropic.…`) or an ARN ending in
 * either; undefined for other vendors' models. Anthropic's own request
 * fields (thinking, top_k) go to these only.
 */
export function anthropicModelOf(modelId: string): string | undefined {
  const last = modelId.split("/").at(-1) ?? modelId;
  const match = /(?:^|\.)anthropic\.(claude-[^:]+)/.exec(last);
  return match?.[1];
}

/**
 * What ConverseStream cannot take: penalties, seeds, logit bias and
 * logprobs have no field; JSON mode without a schema has none either
 * (`outputConfig` takes a schema) and no `parallel_tool_calls: false`;
 * top_k and reasoning exist for Claude models only (through Anthropic's own
 * fields); service tiers are default, flex and priority.
 */
export function converseUnsupportedParams(request: ChatRequest, target: UpstreamTarget): OptionalParam[] {
  const s = request.sampling;
  const claude = anthropicModelOf(target.model) !== undefined;
  const out: OptionalParam[] = [];
  if (request.responseFormat?.type === "json_object") out.push("response_format");
  if (s.seed !== undefined) out.push("sampling.seed");
  if (s.presencePenalty !== undefined) out.push("sampling.presence_penalty");
  if (s.frequencyPenalty !== undefined) out.push("sampling.frequency_penalty");
  if (hasLogitBias(request)) out.push("sampling.logit_bias");
  if (request.logprobs) out.push("logprobs");
  if (!claude && s.topK !== undefined) out.push("sampling.top_k");
  // Converse's toolConfig has no switch for it, and Claude's own tool_choice would contradict toolConfig's.
  if (request.parallelToolCalls === false) out.push("parallel_tool_calls");
  if (!claude && request.reasoning?.effort !== undefined && request.reasoning.effort !== "none") out.push("reasoning.effort");
  if (!claude && request.reasoning?.budgetTokens !== undefined) out.push("reasoning.budget_tokens");
  if (request.serviceTier === "auto" || request.serviceTier === "scale") out.push("service_tier");
  return out;
}

function image(url: string, field: string): Json {
  const data = parseDataUrl(url);
  const format = data ? IMAGE_FORMATS[data.mediaType.toLowerCase()] : undefined;
  if (!data || !format) {
    // Converse takes image bytes (or S3 objects), never a URL to fetch.
    throw new GatewayError("invalid_request", `${field}: Bedrock takes images as base64 data URLs of PNG, JPEG, GIF or WebP, not as links`, { field });
  }
  return { image: { format, source: { bytes: data.data } } };
}

function blocks(m: ChatMessage, i: number): Json[] {
  const out: Json[] = [];
  m.content.forEach((part, j) => {
    if (part.type === "text") {
      if (part.text !== "") out.push({ text: part.text });
    } else if (part.type === "image_url") out.push(image(part.url, `messages[${i}].content[${j}].image_url`));
    else if (part.type === "reasoning") {
      // Claude verifies a replayed block's signature against its text; one without both is left out, as on Anthropic.
      if (part.redactedData !== undefined) out.push({ reasoningContent: { redactedContent: part.redactedData } });
      else if (part.signature !== undefined && part.text !== "") out.push({ reasoningContent: { reasoningText: { text: part.text, signature: part.signature } } });
    }
    // Hosted items (another API's server tools) were dropped by name before (providers/hosted-tools.ts).
  });
  (m.toolCalls ?? []).forEach((call, j) => {
    out.push({ toolUse: { toolUseId: call.id, name: call.name, input: parseToolArguments(call.arguments, `messages[${i}].tool_calls[${j}].arguments`) } });
  });
  return out;
}

/** Turns in Converse's shape; consecutive tool results become one user turn, as Converse wants them. */
function messages(request: ChatRequest): Json[] {
  const out: Array<{ role: string; content: Json[] }> = [];
  request.messages.forEach((m, i) => {
    if (m.role === "system") return;
    const role = m.role === "assistant" ? "assistant" : "user";
    const content = m.role === "tool" ? [{ toolResult: { toolUseId: m.toolCallId, content: [{ text: messageText(m) }], ...(m.isError ? { status: "error" } : {}) } }] : blocks(m, i);
    const last = out.at(-1);
    if (last?.role === role) last.content.push(...content);
    else out.push({ role, content });
  });
  return out;
}

function toolChoice(choice: ToolChoice | undefined): Json | undefined {
  switch (choice?.type) {
    case undefined:
    case "auto":
      return undefined;
    case "required":
      return { any: {} };
    case "function":
      return { tool: { name: choice.name } };
    case "none":
    case "hosted":
      return undefined;
  }
}

/**
 * Claude's own fields, as Anthropic's adapter writes them (thinking form by
 * model, budget within max_tokens), sent in `additionalModelRequestFields`:
 * thinking, its effort and top_k.
 */
function anthropicFields(request: ChatRequest, claude: string, target: UpstreamTarget): { fields: Json; maxTokens?: number } {
  const body = anthropicRequestBody({ ...request, messages: [], tools: [], toolChoice: undefined, hostedTools: [] } as ChatRequest, claude, target.thinking ?? target.provider.thinking);
  const effort = (body.output_config as Json | undefined)?.effort;
  const fields: Json = {
    ...(body.thinking ? { thinking: body.thinking } : {}),
    ...(effort !== undefined ? { output_config: { effort } } : {}),
    ...(request.sampling.topK === undefined ? {} : { top_k: request.sampling.topK }),
  };
  // With thinking on, max_tokens must leave room above the budget: Anthropic's adapter's choice.
  return body.thinking ? { fields, maxTokens: body.max_tokens as number } : { fields };
}

/** The ConverseStream body (modelId goes in the path). */
export function converseRequestBody(request: ChatRequest, target: UpstreamTarget): Json {
  const s = request.sampling;
  if (request.toolChoice?.type === "none" && request.tools.length > 0) {
    throw new GatewayError("invalid_request", 'tool_choice: Bedrock\'s Converse API has no "none"; remove the tools or the choice', { field: "tool_choice" });
  }
  const claude = anthropicModelOf(target.model);
  const anthropic = claude === undefined ? { fields: {} as Json } : anthropicFields(request, claude, target);
  const maxTokens = s.maxTokens ?? anthropic.maxTokens;
  const system = request.messages
    .filter((m) => m.role === "system")
    .map(messageText)
    .filter((t) => t !== "");
  const inferenceConfig = {
    ...(maxTokens === undefined ? {} : { maxTokens }),
    ...(s.temperature === undefined ? {} : { temperature: s.temperature }),
    ...(s.topP === undefined ? {} : { topP: s.topP }),
    ...(s.stop.length > 0 ? { stopSequences: s.stop } : {}),
  };
  const choice = toolChoice(request.toolChoice);
  const format = request.responseFormat?.type === "json_schema" ? request.responseFormat : undefined;
  const body: Json = {
    messages: messages(request),
    ...(system.length > 0 ? { system: system.map((text) => ({ text })) } : {}),
    ...(Object.keys(inferenceConfig).length > 0 ? { inferenceConfig } : {}),
    ...(request.tools.length > 0
      ? {
          toolConfig: {
            tools: request.tools.map((t) => ({
              toolSpec: { name: t.name, ...(t.description ? { description: t.description } : {}), inputSchema: { json: t.parameters }, ...(t.strict === undefined ? {} : { strict: t.strict }) },
            })),
            ...(choice ? { toolChoice: choice } : {}),
          },
        }
      : {}),
    ...(Object.keys(anthropic.fields).length > 0 ? { additionalModelRequestFields: anthropic.fields } : {}),
    ...(format ? { outputConfig: { textFormat: { type: "json_schema", structure: { jsonSchema: { schema: JSON.stringify(format.schema), name: format.name, ...(format.description ? { description: format.description } : {}) } } } } } : {}),
    ...(request.serviceTier === "default" || request.serviceTier === "flex" || request.serviceTier === "priority" ? { serviceTier: { type: request.serviceTier } } : {}),
    ...(request.metadata.providerMetadata && Object.keys(request.metadata.providerMetadata).length > 0 ? { requestMetadata: request.metadata.providerMetadata } : {}),
  };
  return withProviderOptions(body, request, "bedrock");
}

/** `POST {base}/model/{modelId}/converse-stream`; the model id (an inference profile, an ARN) escaped as one path segment. */
export function buildConverseRequest(request: ChatRequest, target: UpstreamTarget): UpstreamRequest {
  return {
    url: `${target.provider.baseUrl}/model/${encodeURIComponent(target.model)}/converse-stream`,
    headers: { "content-type": "application/json", accept: "application/vnd.amazon.eventstream" },
    body: JSON.stringify(converseRequestBody(request, target)),
  };
}
