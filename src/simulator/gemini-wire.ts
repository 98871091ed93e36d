import { geminiLoopInput, maxTokensOf } from "./loop-input.js";
import type { Script } from "./script.js";
import { signCall, signThinking } from "./signatures.js";
import type { Frame, SimRequest, WireFormat } from "./wire.js";

interface GeminiBody {
  contents?: unknown;
  systemInstruction?: { parts?: unknown };
  tools?: unknown;
  generationConfig?: {
    responseMimeType?: unknown;
    responseJsonSchema?: unknown;
    responseSchema?: unknown;
    responseLogprobs?: unknown;
    logprobs?: unknown;
    maxOutputTokens?: unknown;
  };
}

interface Part {
  text?: unknown;
  thought?: unknown;
  thoughtSignature?: unknown;
  functionCall?: { name?: unknown; args?: unknown };
  functionResponse?: unknown;
}

/**
 * Gemini 3's replay rules: in the current turn (everything after the last
 * user message that is not only function responses) the first functionCall
 * part of each model step must carry the signature issued with it; and any
 * signature sent back on text must be the one issued for that text.
 */
function checkReplay(contents: Array<{ role?: unknown; parts?: unknown }>): void {
  const isUserText = (c: { role?: unknown; parts?: unknown }) => c.role === "user" && Array.isArray(c.parts) && (c.parts as Part[]).some((p) => p.functionResponse === undefined);
  const turnStart = contents.findLastIndex(isUserText);
  contents.forEach((c, i) => {
    if (c.role !== "model" || !Array.isArray(c.parts)) return;
    const parts = c.parts as Part[];
    const text = parts
      .filter((p) => p.thought !== true && typeof p.text === "string")
      .map((p) => p.text as string)
      .join("");
    parts.forEach((p, j) => {
      if (p.functionCall === undefined && typeof p.thoughtSignature === "string" && p.thoughtSignature !== signThinking(text)) {
        throw new Error(`contents[${i}].parts[${j}]: Invalid thought signature`);
      }
    });
    const first = parts.findIndex((p) => p.functionCall !== undefined);
    if (first < 0 || i < turnStart) return;
    const call = parts[first]!;
    if (typeof call.thoughtSignature !== "string") {
      throw new Error(`Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly. Additional data, function call \`${String(call.functionCall?.name)}\`, position ${first + 1}.`);
    }
    if (call.thoughtSignature !== signCall(String(call.functionCall?.name), call.functionCall?.args)) {
      throw new Error(`contents[${i}].parts[${first}]: Invalid thought signature`);
    }
  });
}

/** Chosen and top candidates for one streamed token, as `logprobsResult` carries them. */
function logprobsResult(token: string, i: number, top: number): Record<string, unknown> {
  const logProbability = -((i % 7) + 1) / 100;
  const candidates = Array.from({ length: top }, (_, k) => (k === 0 ? { token, logProbability } : { token: `alt${k}`, logProbability: logProbability - k }));
  return { chosenCandidates: [{ token, logProbability }], topCandidates: [{ candidates }] };
}

/** The texts a request's knobs may come in: text parts, and the string fields of a function response (as the other wires read tool results). */
function partTexts(parts: unknown): string[] {
  if (!Array.isArray(parts)) return [];
  return (parts as Part[]).flatMap((p) => {
    if (typeof p.text === "string") return [p.text];
    const response = (p.functionResponse as { response?: unknown } | undefined)?.response;
    if (response === null || typeof response !== "object") return [];
    return Object.values(response).filter((v): v is string => typeof v === "string");
  });
}

const PATH = /^\/v1beta\/models\/(.+):(streamGenerateContent|generateContent)$/;

/** Whether a path is a Gemini generation call. */
export function isGeminiPath(path: string): boolean {
  return PATH.test(path);
}

/** Gemini says STOP after calls too; MAX_TOKENS when cut at maxOutputTokens. */
function finishReason(script: Script): string {
  return script.finishReason === "length" ? "MAX_TOKENS" : "STOP";
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

/** The first call of a response carries the signature, as Gemini 3 does with parallel calls. */
function signedCall(whole: ReturnType<typeof calls>, index: number): Record<string, unknown> {
  const call = whole.get(index)!;
  return index === 0 ? { functionCall: call, thoughtSignature: signCall(call.name, call.args) } : { functionCall: call };
}

/** A thinking answer without calls signs its text, on the last text part. */
function textSignature(script: Script): { thoughtSignature?: string } {
  if (script.reasoningTokens === 0 || script.steps.some((s) => s.type === "tool_call")) return {};
  const text = script.steps.map((s) => (s.type === "text" ? s.text : "")).join("");
  return { thoughtSignature: signThinking(text) };
}

const chunk = (parts: unknown[], model: string, candidate: object = {}, top: object = {}) => JSON.stringify({ candidates: [{ content: { role: "model", parts }, index: 0, ...candidate }], modelVersion: model, ...top });

/** A Gemini body for `model` (from the path, on the Gemini API and on Vertex alike), checked as Gemini checks it. */
export function parseGeminiBody(raw: unknown, model: string, stream: boolean): SimRequest {
  const body = raw as GeminiBody;
  if (!Array.isArray(body.contents)) throw new Error("contents is required");
  checkReplay(body.contents as Array<{ role?: unknown; parts?: unknown }>);
  const config = body.generationConfig ?? {};
  const schema = (config.responseJsonSchema ?? config.responseSchema) as Record<string, unknown> | undefined;
  return {
    ...(config.responseMimeType === "application/json" ? { json: schema ? { schema } : {} } : {}),
    ...(config.responseLogprobs === true ? { logprobs: { top: typeof config.logprobs === "number" ? config.logprobs : 0 } } : {}),
    model,
    stream,
    texts: [...partTexts(body.systemInstruction?.parts), ...(body.contents as Array<{ parts?: unknown }>).flatMap((c) => partTexts(c.parts))],
    ...geminiLoopInput(body),
    ...maxTokensOf(config.maxOutputTokens),
    includeUsage: true,
  };
}

/** Google Gemini (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`). */
export const geminiWire: WireFormat = {
  name: "gemini",
  parseRequest(raw, url) {
    const match = PATH.exec(url.pathname)!;
    return parseGeminiBody(raw, decodeURIComponent(match[1]!), match[2] === "streamGenerateContent");
  },
  streamFrames(script, request, knobs) {
    const whole = calls(script);
    const frames: Frame[] = [];
    let textIndex = 0;
    for (const step of script.steps) {
      if (step.type === "text") {
        const logprobs = request.logprobs ? { logprobsResult: logprobsResult(step.text, textIndex++, request.logprobs.top) } : {};
        frames.push({ data: chunk([{ text: step.text }], request.model, logprobs), token: true });
      } else if (step.type === "reasoning") frames.push({ data: chunk([{ text: step.text, thought: true }], request.model), token: true });
      else if (step.type === "tool_call") frames.push({ data: chunk([signedCall(whole, step.index)], request.model), token: true });
      // tool_args: already inside the whole call.
    }
    const usage = knobs.usage === "never" ? {} : { usageMetadata: usageMetadata(script) };
    frames.push({ data: chunk([{ text: "", ...textSignature(script) }], request.model, { finishReason: finishReason(script) }, usage), token: false });
    return frames;
  },
  completeBody(script, request) {
    const parts: unknown[] = [];
    const whole = calls(script);
    for (const step of script.steps) {
      if (step.type === "text") parts.push({ text: step.text });
      else if (step.type === "reasoning") parts.push({ text: step.text, thought: true });
      else if (step.type === "tool_call") parts.push(signedCall(whole, step.index));
    }
    const signature = textSignature(script);
    const lastText = parts.findLast((p) => typeof (p as { text?: unknown }).text === "string" && (p as { thought?: unknown }).thought !== true);
    if (lastText) Object.assign(lastText as object, signature);
    return { candidates: [{ content: { role: "model", parts }, finishReason: finishReason(script), index: 0 }], usageMetadata: usageMetadata(script), modelVersion: request.model };
  },
  errorBody(status, message) {
    const code = status === 429 ? "RESOURCE_EXHAUSTED" : status === 404 ? "NOT_FOUND" : status === 403 ? "PERMISSION_DENIED" : status >= 500 ? "UNAVAILABLE" : "INVALID_ARGUMENT";
    return { error: { code: status, message, status: code } };
  },
  inBandError(message, kind) {
    const [code, status] = kind === "rate_limit" || kind === "quota" ? [429, "RESOURCE_EXHAUSTED"] : kind === "auth" ? [403, "PERMISSION_DENIED"] : [500, "INTERNAL"];
    return { data: JSON.stringify({ error: { code, message, status } }), token: false };
  },
};
