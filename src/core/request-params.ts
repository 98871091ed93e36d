import type { ChatRequest } from "./chat-request.js";

/**
 * The optional request parameters a provider may be unable to honour, named
 * by their protobuf field paths (edges rename them to their own); the two the
 * protobuf API has no field for (`sampling.top_k`, `messages.is_error`, from
 * the Anthropic edge) are named the same way. A closed list: adapters report
 * from it, and `withoutParams` can remove each.
 */
export type OptionalParam =
  | "response_format"
  | "reasoning.effort"
  | "reasoning.budget_tokens"
  | "sampling.seed"
  | "sampling.top_k"
  | "sampling.stop"
  | "sampling.presence_penalty"
  | "sampling.frequency_penalty"
  | "sampling.logit_bias"
  | "logprobs"
  | "parallel_tool_calls"
  | "tools.strict"
  | "service_tier"
  | "metadata.provider_metadata"
  | "messages.is_error";

export function hasLogitBias(request: ChatRequest): boolean {
  return Object.keys(request.sampling.logitBias ?? {}).length > 0;
}

export function hasProviderMetadata(request: ChatRequest): boolean {
  return Object.keys(request.metadata.providerMetadata ?? {}).length > 0;
}

/** Whether a tool message reports a failure (`isError`). */
export function hasToolErrors(request: ChatRequest): boolean {
  return request.messages.some((m) => m.isError === true);
}

export function hasStrictTools(request: ChatRequest): boolean {
  return request.tools.some((t) => t.strict === true);
}

function without<T extends object, K extends keyof T>(value: T, key: K): Omit<T, K> {
  const { [key]: _dropped, ...rest } = value;
  return rest;
}

/** The request without the named parameters, for an alias that drops what its provider cannot honour. */
export function withoutParams(request: ChatRequest, params: readonly OptionalParam[]): ChatRequest {
  let out: ChatRequest = request;
  for (const param of params) {
    switch (param) {
      case "response_format":
        out = without(out, "responseFormat");
        break;
      case "reasoning.effort":
        if (out.reasoning) out = { ...out, reasoning: without(out.reasoning, "effort") };
        break;
      case "reasoning.budget_tokens":
        if (out.reasoning) out = { ...out, reasoning: without(out.reasoning, "budgetTokens") };
        break;
      case "sampling.seed":
        out = { ...out, sampling: without(out.sampling, "seed") };
        break;
      case "sampling.top_k":
        out = { ...out, sampling: without(out.sampling, "topK") };
        break;
      case "sampling.stop":
        out = { ...out, sampling: { ...out.sampling, stop: [] } };
        break;
      case "sampling.presence_penalty":
        out = { ...out, sampling: without(out.sampling, "presencePenalty") };
        break;
      case "sampling.frequency_penalty":
        out = { ...out, sampling: without(out.sampling, "frequencyPenalty") };
        break;
      case "sampling.logit_bias":
        out = { ...out, sampling: without(out.sampling, "logitBias") };
        break;
      case "logprobs":
        out = without(out, "logprobs");
        break;
      case "parallel_tool_calls":
        out = without(out, "parallelToolCalls");
        break;
      case "tools.strict":
        out = { ...out, tools: out.tools.map((t) => without(t, "strict")) };
        break;
      case "service_tier":
        out = without(out, "serviceTier");
        break;
      case "metadata.provider_metadata":
        out = { ...out, metadata: without(out.metadata, "providerMetadata") };
        break;
      case "messages.is_error":
        out = { ...out, messages: out.messages.map((m) => (m.isError === undefined ? m : without(m, "isError"))) };
        break;
    }
  }
  return out;
}
