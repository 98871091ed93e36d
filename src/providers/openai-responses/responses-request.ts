import { type ChatMessage, type ChatRequest, messageText, type ProviderKind, type ToolChoice, type ToolDefinition } from "../../core/chat-request.js";
import { hasLogitBias, type OptionalParam } from "../../core/request-params.js";
import type { UpstreamRequest, UpstreamTarget } from "../provider.js";
import { withProviderOptions } from "../provider-options.js";

/**
 * The Responses API has no seed, penalties, logit bias, top_k, stop
 * sequences or thinking budget; log probabilities need an `include` this
 * adapter does not ask for.
 */
export function responsesUnsupportedParams(request: ChatRequest): OptionalParam[] {
  const s = request.sampling;
  const out: OptionalParam[] = [];
  if (s.seed !== undefined) out.push("sampling.seed");
  if (s.topK !== undefined) out.push("sampling.top_k");
  if (s.presencePenalty !== undefined) out.push("sampling.presence_penalty");
  if (s.frequencyPenalty !== undefined) out.push("sampling.frequency_penalty");
  if (hasLogitBias(request)) out.push("sampling.logit_bias");
  if (s.stop.length > 0) out.push("sampling.stop");
  if (request.logprobs) out.push("logprobs");
  if (request.reasoning?.budgetTokens !== undefined) out.push("reasoning.budget_tokens");
  return out;
}

/** The text a freeform call's canonical arguments (`{"input": …}`) carry; the arguments themselves when they are not that shape. */
export function freeformInput(args: string): string {
  try {
    const parsed = JSON.parse(args) as unknown;
    const input = parsed !== null && typeof parsed === "object" ? (parsed as { input?: unknown }).input : undefined;
    return typeof input === "string" ? input : args;
  } catch {
    return args;
  }
}

/** A tool's call name and namespace as the Responses API writes them. */
function callName(tool: ToolDefinition | undefined, name: string): Record<string, string> {
  return tool?.namespace ? { name: tool.namespace.member, namespace: tool.namespace.name } : { name };
}

function inputContent(m: ChatMessage): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const part of m.content) {
    if (part.type === "text") out.push({ type: "input_text", text: part.text });
    else if (part.type === "image_url") out.push({ type: "input_image", image_url: part.url, detail: part.detail ?? "auto" });
  }
  return out;
}

/**
 * The conversation as input items: an assistant turn's parts in order
 * (reasoning with its encrypted content, text as an output message, hosted
 * tool items as they came), then its calls — a freeform tool's as a
 * `custom_tool_call` with its text, a namespace member's under its namespace.
 */
function inputItems(request: ChatRequest): Array<Record<string, unknown>> {
  const tools = new Map(request.tools.map((t) => [t.name, t]));
  const freeformCalls = new Set<string>();
  const items: Array<Record<string, unknown>> = [];
  for (const m of request.messages) {
    if (m.role === "tool") {
      const output = messageText(m);
      items.push({ type: freeformCalls.has(m.toolCallId ?? "") ? "custom_tool_call_output" : "function_call_output", call_id: m.toolCallId, output });
      continue;
    }
    if (m.role !== "assistant") {
      items.push({ type: "message", role: m.role === "system" ? "system" : "user", content: inputContent(m) });
      continue;
    }
    for (const part of m.content) {
      if (part.type === "text" && part.text !== "") items.push({ type: "message", role: "assistant", content: [{ type: "output_text", text: part.text }] });
      else if (part.type === "reasoning" && part.signature !== undefined) {
        // Only OpenAI's own reasoning replays here: its signature is the encrypted content it issued.
        items.push({ type: "reasoning", summary: part.text === "" ? [] : [{ type: "summary_text", text: part.text }], encrypted_content: part.signature });
      } else if (part.type === "hosted_item" && part.origin === "openai") items.push({ ...part.item });
    }
    for (const call of m.toolCalls ?? []) {
      const tool = tools.get(call.name);
      if (tool?.freeform) {
        freeformCalls.add(call.id);
        items.push({ type: "custom_tool_call", call_id: call.id, ...callName(tool, call.name), input: freeformInput(call.arguments) });
      } else items.push({ type: "function_call", call_id: call.id, ...callName(tool, call.name), arguments: call.arguments });
    }
  }
  return items;
}

function toolEntry(t: ToolDefinition, name: string): Record<string, unknown> {
  const description = t.description ? { description: t.description } : {};
  if (t.freeform) return { type: "custom", name, ...description, ...(t.freeform.format ? { format: t.freeform.format } : {}) };
  return { type: "function", name, ...description, parameters: t.parameters, ...(t.strict === undefined ? {} : { strict: t.strict }) };
}

/** Tools as the Responses API takes them: namespace members regrouped under their namespace, hosted tools as declared. */
function toolEntries(request: ChatRequest): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  const namespaces = new Map<string, { type: "namespace"; name: string; description: string; tools: Array<Record<string, unknown>> }>();
  for (const t of request.tools) {
    if (!t.namespace) {
      out.push(toolEntry(t, t.name));
      continue;
    }
    let ns = namespaces.get(t.namespace.name);
    if (!ns) {
      ns = { type: "namespace", name: t.namespace.name, description: t.namespace.description, tools: [] };
      namespaces.set(ns.name, ns);
      out.push(ns);
    }
    ns.tools.push(toolEntry(t, t.namespace.member));
  }
  for (const h of request.hostedTools ?? []) if (h.origin === "openai") out.push({ ...h.declaration });
  return out;
}

function toolChoice(choice: ToolChoice, request: ChatRequest): unknown {
  switch (choice.type) {
    case "auto":
    case "none":
    case "required":
      return choice.type;
    case "function": {
      const tool = request.tools.find((t) => t.name === choice.name);
      return { type: tool?.freeform ? "custom" : "function", ...callName(tool, choice.name) };
    }
    case "hosted":
      return { type: choice.tool };
  }
}

/**
 * The Responses API body: always streaming, never stored upstream (the
 * gateway keeps no state and the caller sends the whole conversation), with
 * reasoning's encrypted content included so a turn can be replayed.
 */
export function responsesRequestBody(request: ChatRequest, model: string, kind: ProviderKind = "openai-responses"): Record<string, unknown> {
  const s = request.sampling;
  const tools = toolEntries(request);
  const format = request.responseFormat;
  const metadata = request.metadata.providerMetadata ?? {};
  const body = {
    model,
    input: inputItems(request),
    stream: true,
    store: false,
    include: ["reasoning.encrypted_content"],
    ...(tools.length > 0 ? { tools } : {}),
    ...(request.toolChoice ? { tool_choice: toolChoice(request.toolChoice, request) } : {}),
    ...(request.parallelToolCalls === undefined ? {} : { parallel_tool_calls: request.parallelToolCalls }),
    ...(format ? { text: { format: format.type === "json_schema" ? { type: "json_schema", name: format.name, schema: format.schema, ...(format.strict === undefined ? {} : { strict: format.strict }) } : { type: format.type } } } : {}),
    ...(request.reasoning?.effort ? { reasoning: { effort: request.reasoning.effort, ...(request.reasoning.includeReasoning === false ? {} : { summary: "auto" }) } } : {}),
    ...(s.temperature === undefined ? {} : { temperature: s.temperature }),
    ...(s.topP === undefined ? {} : { top_p: s.topP }),
    ...(s.maxTokens === undefined ? {} : { max_output_tokens: s.maxTokens }),
    ...(request.serviceTier ? { service_tier: request.serviceTier } : {}),
    ...(request.carried?.promptCacheKey ? { prompt_cache_key: request.carried.promptCacheKey } : {}),
    ...((request.carried?.safetyIdentifier ?? request.metadata.userId) ? { safety_identifier: request.carried?.safetyIdentifier ?? request.metadata.userId } : {}),
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
  };
  return withProviderOptions(body, request, kind);
}

export function buildResponsesRequest(request: ChatRequest, target: UpstreamTarget): UpstreamRequest {
  const key = target.provider.apiKey;
  return {
    url: `${target.provider.baseUrl}/responses`,
    headers: {
      "content-type": "application/json",
      accept: "text/event-stream",
      ...(key ? { authorization: `Bearer ${key.reveal()}` } : {}),
    },
    body: JSON.stringify(responsesRequestBody(request, target.model)),
  };
}
