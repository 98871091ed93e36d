import type { Script } from "./script.js";
import type { Frame, SimRequest, WireFormat } from "./wire.js";

interface GeminiBody {
  contents?: unknown;
  systemInstruction?: { parts?: unknown };
  tools?: unknown;
}

function partTexts(parts: unknown): string[] {
  if (!Array.isArray(parts)) return [];
  return (parts as Array<{ text?: unknown }>).flatMap((p) => (typeof p.text === "string" ? [p.text] : []));
}

const PATH = /^\/v1beta\/models\/(.+):(streamGenerateContent|generateContent)$/;

/** Whether a path is a Gemini generation call. */
export function isGeminiPath(path: string): boolean {
  return PATH.test(path);
}

function usageMetadata(script: Script): Record<string, number> {
  return {
    promptTokenCount: script.inputTokens,
    candidatesTokenCount: script.outputTokens - script.reasoningTokens,
    thoughtsTokenCount: script.reasoningTokens,
    totalTokenCount: script.inputTokens + script.outputTokens,
  };
}

/** Whole function calls: Gemini sends a call's arguments as one object, never in fragments. */
function calls(script: Script): Map<number, { id: string; name: string; args: unknown }> {
  const json = new Map<number, { id: string; name: string; text: string }>();
  for (const step of script.steps) {
    if (step.type === "tool_call") json.set(step.index, { id: step.id, name: step.name, text: step.arguments });
    else if (step.type === "tool_args") json.get(step.index)!.text += step.fragment;
  }
  return new Map([...json].map(([i, c]) => [i, { id: c.id, name: c.name, args: JSON.parse(c.text) as unknown }]));
}

const chunk = (parts: unknown[], model: string, candidate: object = {}, top: object = {}) =>
  JSON.stringify({ candidates: [{ content: { role: "model", parts }, index: 0, ...candidate }], modelVersion: model, ...top });

/** Google Gemini (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`). */
export const geminiWire: WireFormat = {
  name: "gemini",
  parseRequest(raw, url) {
    const match = PATH.exec(url.pathname)!;
    const body = raw as GeminiBody;
    if (!Array.isArray(body.contents)) throw new Error("contents is required");
    const tools = Array.isArray(body.tools) ? (body.tools as Array<{ functionDeclarations?: Array<{ name?: unknown }> }>) : [];
    return {
      model: decodeURIComponent(match[1]!),
      stream: match[2] === "streamGenerateContent",
      texts: [...partTexts(body.systemInstruction?.parts), ...(body.contents as Array<{ parts?: unknown }>).flatMap((c) => partTexts(c.parts))],
      toolNames: tools.flatMap((t) => t.functionDeclarations ?? []).map((f) => f.name).filter((n): n is string => typeof n === "string"),
      includeUsage: true,
    } satisfies SimRequest;
  },
  streamFrames(script, request, knobs) {
    const whole = calls(script);
    const frames: Frame[] = [];
    for (const step of script.steps) {
      if (step.type === "text") frames.push({ data: chunk([{ text: step.text }], request.model), token: true });
      else if (step.type === "reasoning") frames.push({ data: chunk([{ text: step.text, thought: true }], request.model), token: true });
      else if (step.type === "tool_call") frames.push({ data: chunk([{ functionCall: whole.get(step.index) }], request.model), token: true });
      // tool_args: already inside the whole call.
    }
    const usage = knobs.usage === "never" ? {} : { usageMetadata: usageMetadata(script) };
    frames.push({ data: chunk([{ text: "" }], request.model, { finishReason: "STOP" }, usage), token: false });
    return frames;
  },
  completeBody(script, request) {
    const parts: unknown[] = [];
    const whole = calls(script);
    for (const step of script.steps) {
      if (step.type === "text") parts.push({ text: step.text });
      else if (step.type === "reasoning") parts.push({ text: step.text, thought: true });
      else if (step.type === "tool_call") parts.push({ functionCall: whole.get(step.index) });
    }
    return { candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }], usageMetadata: usageMetadata(script), modelVersion: request.model };
  },
  errorBody(status, message) {
    const code = status === 429 ? "RESOURCE_EXHAUSTED" : status === 404 ? "NOT_FOUND" : status === 403 ? "PERMISSION_DENIED" : status >= 500 ? "UNAVAILABLE" : "INVALID_ARGUMENT";
    return { error: { code: status, message, status: code } };
  },
  inBandError(message) {
    return { data: JSON.stringify({ error: { code: 500, message, status: "INTERNAL" } }), token: false };
  },
};
