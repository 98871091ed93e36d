import { type ChatMessage, type ChatRequest, messageText, type ReasoningEffort, type ToolChoice } from "../../core/chat-request.js";
import { GatewayError } from "../../core/errors.js";
import { hasLogitBias, hasProviderMetadata, hasStrictTools, type OptionalParam } from "../../core/request-params.js";
import type { UpstreamRequest, UpstreamTarget } from "../provider.js";
import { withProviderOptions } from "../provider-options.js";
import { parseDataUrl, parseToolArguments } from "../tool-arguments.js";
import { groundingTools } from "./grounding-tools.js";

const IMAGE_TYPES: Record<string, string> = { png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp" };

function imageType(url: string): string {
  const ext = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase();
  return (ext && IMAGE_TYPES[ext]) ?? "image/jpeg";
}

/**
 * A message's parts. Replayed reasoning becomes thought parts with their
 * signature; a bare signature (Gemini signs text parts too) goes back on the
 * part before it, where it came from. Redacted reasoning is Anthropic's and
 * has no Gemini form.
 */
function parts(m: ChatMessage): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const part of m.content) {
    if (part.type === "text") out.push({ text: part.text });
    else if (part.type === "reasoning") {
      if (part.redactedData !== undefined) continue;
      const signature = part.signature === undefined ? {} : { thoughtSignature: part.signature };
      const last = out.at(-1);
      if (part.text !== "") out.push({ text: part.text, thought: true, ...signature });
      else if (last && last.thoughtSignature === undefined) Object.assign(last, signature);
      else if (part.signature !== undefined) out.push({ text: "", ...signature });
    } else if (part.type === "image_url") {
      const data = parseDataUrl(part.url);
      out.push(data ? { inlineData: { mimeType: data.mediaType, data: data.data } } : { fileData: { mimeType: imageType(part.url), fileUri: part.url } });
    }
  }
  return out;
}

/** A tool result as Gemini wants it: an object. JSON object results pass as they are, anything else is wrapped. */
function functionResponse(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown;
    if (value !== null && typeof value === "object" && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // not JSON: wrap below
  }
  return { content: text };
}

function contents(messages: readonly ChatMessage[]): Array<Record<string, unknown>> {
  // Gemini names a function response by the function's name, not a call id:
  // recover the name from the assistant turn that made the call.
  const callNames = new Map<string, string>();
  const out: Array<Record<string, unknown>> = [];
  messages.forEach((m, i) => {
    if (m.role === "system") return;
    if (m.role === "tool") {
      const name = callNames.get(m.toolCallId ?? "");
      if (!name) {
        throw new GatewayError("invalid_request", `messages[${i}].tool_call_id: no earlier assistant tool call has this id`, {
          field: `messages[${i}].tool_call_id`,
        });
      }
      // Gemini reads a failure from the response's "error" key.
      const response = m.isError ? { error: messageText(m) } : functionResponse(messageText(m));
      out.push({ role: "user", parts: [{ functionResponse: { name, response } }] });
      return;
    }
    const p = parts(m);
    (m.toolCalls ?? []).forEach((call, j) => {
      callNames.set(call.id, call.name);
      p.push({
        functionCall: { name: call.name, args: parseToolArguments(call.arguments, `messages[${i}].tool_calls[${j}].arguments`) },
        // Gemini 3 rejects a replayed call without the signature it was issued with.
        ...(call.signature === undefined ? {} : { thoughtSignature: call.signature }),
      });
    });
    out.push({ role: m.role === "assistant" ? "model" : "user", parts: p });
  });
  return out;
}

function toolConfig(choice: ToolChoice): Record<string, unknown> {
  switch (choice.type) {
    case "auto":
      return { functionCallingConfig: { mode: "AUTO" } };
    case "none":
      return { functionCallingConfig: { mode: "NONE" } };
    case "required":
      return { functionCallingConfig: { mode: "ANY" } };
    case "function":
      return { functionCallingConfig: { mode: "ANY", allowedFunctionNames: [choice.name] } };
    case "hosted":
      // Google Search grounding is not a function Gemini can be forced to call: only the tool's presence asks for it.
      return { functionCallingConfig: { mode: "AUTO" } };
  }
}

/** Our effort levels as Gemini thinking levels; `none` is a zero budget instead. */
const THINKING_LEVEL: Record<Exclude<ReasoningEffort, "none">, string> = {
  minimal: "minimal",
  low: "low",
  medium: "medium",
  high: "high",
  xhigh: "high",
};

/**
 * generateContent has no logit bias, request metadata, service tier, strict
 * function declarations or switch for parallel calls; and a thinking level
 * cannot be combined with a thinking budget.
 */
export function geminiUnsupportedParams(request: ChatRequest): OptionalParam[] {
  const out: OptionalParam[] = [];
  const r = request.reasoning;
  if (r?.effort !== undefined && r.budgetTokens !== undefined) out.push("reasoning.effort");
  if (hasLogitBias(request)) out.push("sampling.logit_bias");
  if (request.parallelToolCalls === false) out.push("parallel_tool_calls");
  if (hasStrictTools(request)) out.push("tools.strict");
  if (request.serviceTier !== undefined) out.push("service_tier");
  if (hasProviderMetadata(request)) out.push("metadata.provider_metadata");
  return out;
}

function thinkingConfig(request: ChatRequest): Record<string, unknown> | undefined {
  const r = request.reasoning;
  if (!r) return undefined;
  const config = {
    ...(r.budgetTokens !== undefined ? { thinkingBudget: r.budgetTokens } : r.effort === "none" ? { thinkingBudget: 0 } : {}),
    ...(r.budgetTokens === undefined && r.effort !== undefined && r.effort !== "none" ? { thinkingLevel: THINKING_LEVEL[r.effort] } : {}),
    ...(r.includeReasoning === undefined ? {} : { includeThoughts: r.includeReasoning }),
  };
  return Object.keys(config).length > 0 ? config : undefined;
}

function responseFields(request: ChatRequest): Record<string, unknown> {
  const format = request.responseFormat;
  switch (format?.type) {
    case undefined:
      return {};
    case "text":
      return { responseMimeType: "text/plain" };
    case "json_object":
      return { responseMimeType: "application/json" };
    case "json_schema":
      return { responseMimeType: "application/json", responseJsonSchema: format.schema };
  }
}

/** generateContent body: system instruction apart, function declarations, generation config. */
export function geminiRequestBody(request: ChatRequest): Record<string, unknown> {
  const s = request.sampling;
  const system = request.messages
    .filter((m) => m.role === "system")
    .map(messageText)
    .join("\n\n");
  const thinking = thinkingConfig(request);
  const generationConfig = {
    ...(s.temperature === undefined ? {} : { temperature: s.temperature }),
    ...(s.topP === undefined ? {} : { topP: s.topP }),
    ...(s.topK === undefined ? {} : { topK: s.topK }),
    ...(s.maxTokens === undefined ? {} : { maxOutputTokens: s.maxTokens }),
    ...(s.stop.length > 0 ? { stopSequences: s.stop } : {}),
    ...(s.seed === undefined ? {} : { seed: s.seed }),
    ...(s.presencePenalty === undefined ? {} : { presencePenalty: s.presencePenalty }),
    ...(s.frequencyPenalty === undefined ? {} : { frequencyPenalty: s.frequencyPenalty }),
    ...responseFields(request),
    ...(request.logprobs ? { responseLogprobs: true, ...(request.logprobs.topLogprobs === undefined ? {} : { logprobs: request.logprobs.topLogprobs }) } : {}),
    ...(thinking ? { thinkingConfig: thinking } : {}),
  };
  const grounding = groundingTools(request);
  return withProviderOptions(
    {
      contents: contents(request.messages),
      ...(system ? { systemInstruction: { parts: [{ text: system }] } } : {}),
      ...(request.tools.length > 0 || grounding.length > 0
        ? {
            tools: [
              ...(request.tools.length > 0
                ? [
                    {
                      functionDeclarations: request.tools.map((t) => ({
                        name: t.name,
                        ...(t.description ? { description: t.description } : {}),
                        parameters: t.parameters,
                      })),
                    },
                  ]
                : []),
              ...grounding,
            ],
          }
        : {}),
      ...(request.toolChoice ? { toolConfig: toolConfig(request.toolChoice) } : {}),
      ...(Object.keys(generationConfig).length > 0 ? { generationConfig } : {}),
    },
    request,
    "gemini",
  );
}

/**
 * The streaming request for `url`, with `credentials` as headers: the body
 * and headers every Gemini wire shares (the Gemini API with its key, Vertex
 * AI with a bearer token added later).
 */
export function geminiStreamRequest(request: ChatRequest, url: string, credentials: Readonly<Record<string, string>>): UpstreamRequest {
  return {
    url,
    headers: { "content-type": "application/json", accept: "text/event-stream", ...credentials },
    body: JSON.stringify(geminiRequestBody(request)),
  };
}

export function buildGeminiRequest(request: ChatRequest, target: UpstreamTarget): UpstreamRequest {
  const key = target.provider.apiKey;
  return geminiStreamRequest(request, `${target.provider.baseUrl}/models/${encodeURIComponent(target.model)}:streamGenerateContent?alt=sse`, key ? { "x-goog-api-key": key.reveal() } : {});
}
