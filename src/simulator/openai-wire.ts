import { maxTokensOf, openAiLoopInput } from "./loop-input.js";
import type { Script, ScriptStep } from "./script.js";
import type { Frame, SimRequest, WireFormat } from "./wire.js";

interface OpenAiBody {
  model?: unknown;
  stream?: unknown;
  messages?: unknown;
  tools?: unknown;
  stream_options?: { include_usage?: unknown };
  response_format?: { type?: unknown; json_schema?: { schema?: unknown } };
  logprobs?: unknown;
  top_logprobs?: unknown;
  max_tokens?: unknown;
  max_completion_tokens?: unknown;
}

/** A deterministic log probability for the i-th token, and `top` alternatives below it. */
export function simulatedLogprob(token: string, i: number, top: number): Record<string, unknown> {
  const logprob = -((i % 7) + 1) / 100;
  const bytes = [...Buffer.from(token, "utf8")];
  const alternatives = Array.from({ length: top }, (_, k) => (k === 0 ? { token, logprob, bytes } : { token: `alt${k}`, logprob: logprob - k, bytes: [...Buffer.from(`alt${k}`, "utf8")] }));
  return { token, logprob, bytes, top_logprobs: alternatives };
}

function textsOf(messages: unknown): string[] {
  if (!Array.isArray(messages)) throw new Error("messages must be an array");
  const texts: string[] = [];
  for (const m of messages as Array<{ content?: unknown }>) {
    if (typeof m.content === "string") texts.push(m.content);
    else if (Array.isArray(m.content)) {
      for (const part of m.content as Array<{ type?: unknown; text?: unknown }>) {
        if (part.type === "text" && typeof part.text === "string") texts.push(part.text);
      }
    }
  }
  return texts;
}

function chunk(id: string, model: string, delta: Record<string, unknown>, finishReason: string | null = null, logprobs: unknown = null): string {
  return JSON.stringify({
    id,
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, delta, logprobs, finish_reason: finishReason }],
  });
}

function stepDelta(step: ScriptStep): Record<string, unknown> {
  switch (step.type) {
    case "text":
      return { content: step.text };
    case "reasoning":
      return { reasoning_content: step.text };
    case "tool_call":
      return {
        tool_calls: [{ index: step.index, id: step.id, type: "function", function: { name: step.name, arguments: step.arguments } }],
      };
    case "tool_args":
      return { tool_calls: [{ index: step.index, function: { arguments: step.fragment } }] };
  }
}

function usage(script: Script): Record<string, unknown> {
  return {
    prompt_tokens: script.inputTokens,
    completion_tokens: script.outputTokens,
    total_tokens: script.inputTokens + script.outputTokens,
    completion_tokens_details: { reasoning_tokens: script.reasoningTokens },
  };
}

/** OpenAI Chat Completions (`POST /v1/chat/completions`). */
export const openAiWire: WireFormat = {
  name: "openai",
  parseRequest(raw) {
    const body = raw as OpenAiBody;
    if (typeof body.model !== "string") throw new Error("model must be a string");
    const format = body.response_format;
    const schema = format?.json_schema?.schema;
    return {
      model: body.model,
      stream: body.stream === true,
      texts: textsOf(body.messages),
      ...openAiLoopInput(body),
      ...maxTokensOf(body.max_completion_tokens ?? body.max_tokens),
      includeUsage: body.stream_options?.include_usage === true,
      ...(format?.type === "json_schema" ? { json: { schema: (schema ?? { type: "object" }) as Record<string, unknown> } } : {}),
      ...(format?.type === "json_object" ? { json: {} } : {}),
      ...(body.logprobs === true ? { logprobs: { top: typeof body.top_logprobs === "number" ? body.top_logprobs : 0 } } : {}),
    } satisfies SimRequest;
  },
  streamFrames(script, request, knobs, id) {
    const frames: Frame[] = [{ data: chunk(id, request.model, { role: "assistant", content: "" }), token: false }];
    let textIndex = 0;
    for (const step of script.steps) {
      const logprobs = request.logprobs && step.type === "text" ? { content: [simulatedLogprob(step.text, textIndex++, request.logprobs.top)], refusal: null } : null;
      frames.push({ data: chunk(id, request.model, stepDelta(step), null, logprobs), token: true });
    }
    frames.push({ data: chunk(id, request.model, {}, script.finishReason), token: false });
    const wantUsage = knobs.usage === "always" || (knobs.usage === "auto" && request.includeUsage);
    if (wantUsage) {
      frames.push({
        data: JSON.stringify({ id, object: "chat.completion.chunk", created: 1_700_000_000, model: request.model, choices: [], usage: usage(script) }),
        token: false,
      });
    }
    return frames;
  },
  terminator: { data: "[DONE]", token: false },
  completeBody(script, request, id) {
    let content = "";
    let reasoning = "";
    const calls: Array<{ id: string; type: "function"; function: { name: string; arguments: string } }> = [];
    for (const step of script.steps) {
      if (step.type === "text") content += step.text;
      else if (step.type === "reasoning") reasoning += step.text;
      else if (step.type === "tool_call") calls.push({ id: step.id, type: "function", function: { name: step.name, arguments: step.arguments } });
      else calls[step.index]!.function.arguments += step.fragment;
    }
    return {
      id,
      object: "chat.completion",
      created: 1_700_000_000,
      model: request.model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: content === "" && calls.length > 0 ? null : content,
            ...(reasoning ? { reasoning_content: reasoning } : {}),
            ...(calls.length > 0 ? { tool_calls: calls } : {}),
          },
          finish_reason: script.finishReason,
        },
      ],
      usage: usage(script),
    };
  },
  errorBody(status, message) {
    const type = status === 429 ? "rate_limit_exceeded" : status >= 500 ? "server_error" : "invalid_request_error";
    return { error: { message, type, param: null, code: null } };
  },
  inBandError(message, kind) {
    const [type, code] =
      kind === "rate_limit" ? ["requests", "rate_limit_exceeded"] : kind === "quota" ? ["insufficient_quota", "insufficient_quota"] : kind === "auth" ? ["invalid_request_error", "invalid_api_key"] : ["server_error", null];
    return { data: JSON.stringify({ error: { message, type, param: null, code } }), token: false };
  },
};
