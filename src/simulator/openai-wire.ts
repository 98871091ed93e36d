import type { Script, ScriptStep } from "./script.js";
import type { Frame, SimRequest, WireFormat } from "./wire.js";

interface OpenAiBody {
  model?: unknown;
  stream?: unknown;
  messages?: unknown;
  tools?: unknown;
  stream_options?: { include_usage?: unknown };
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

function chunk(id: string, model: string, delta: Record<string, unknown>, finishReason: string | null = null): string {
  return JSON.stringify({
    id,
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
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
        tool_calls: [
          { index: step.index, id: step.id, type: "function", function: { name: step.name, arguments: step.arguments } },
        ],
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
    const tools = Array.isArray(body.tools) ? (body.tools as Array<{ function?: { name?: unknown } }>) : [];
    return {
      model: body.model,
      stream: body.stream === true,
      texts: textsOf(body.messages),
      toolNames: tools.map((t) => t.function?.name).filter((n): n is string => typeof n === "string"),
      includeUsage: body.stream_options?.include_usage === true,
    } satisfies SimRequest;
  },
  streamFrames(script, request, knobs, id) {
    const frames: Frame[] = [{ data: chunk(id, request.model, { role: "assistant", content: "" }), token: false }];
    for (const step of script.steps) frames.push({ data: chunk(id, request.model, stepDelta(step)), token: true });
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
  inBandError(message) {
    return { data: JSON.stringify({ error: { message, type: "server_error", param: null, code: null } }), token: false };
  },
};
