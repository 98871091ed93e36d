import type { ProviderKind } from "../../core/chat-request.js";
import type { Delta, FinishReason, Usage } from "../../core/delta.js";
import { signatureForCaller } from "./thought-signatures.js";

/** One part of a candidate's content, as generateContent writes it. */
export interface GeminiPart {
  text?: string;
  thought?: true;
  thoughtSignature?: string;
  functionCall?: { id: string; name: string; args: Record<string, unknown> };
}

export interface UsageMetadata {
  readonly promptTokenCount: number;
  readonly candidatesTokenCount: number;
  readonly totalTokenCount: number;
  readonly thoughtsTokenCount?: number;
  readonly cachedContentTokenCount?: number;
}

/** A GenerateContentResponse: a whole answer, or one chunk of a stream. */
export interface GenerateContentResponse {
  candidates: Array<{ content: { role: "model"; parts: GeminiPart[] }; index: 0; finishReason?: string }>;
  usageMetadata?: UsageMetadata;
  modelVersion: string;
  responseId: string;
}

/** Canonical finish reasons as Gemini's: a tool-call stop is a STOP with function calls in it. */
export function geminiFinishReason(reason: FinishReason): string {
  switch (reason) {
    case "stop":
    case "tool_calls":
      return "STOP";
    case "length":
      return "MAX_TOKENS";
    case "content_filter":
      return "SAFETY";
    case "other":
      return "OTHER";
    case "unspecified":
      return "FINISH_REASON_UNSPECIFIED";
  }
}

/** Usage as Gemini counts it: candidates without thoughts, prompt with cached tokens (as the canonical input is). */
export function usageMetadata(usage: Usage): UsageMetadata {
  return {
    promptTokenCount: usage.inputTokens,
    candidatesTokenCount: Math.max(0, usage.outputTokens - usage.reasoningTokens),
    totalTokenCount: usage.inputTokens + usage.outputTokens,
    ...(usage.reasoningTokens > 0 ? { thoughtsTokenCount: usage.reasoningTokens } : {}),
    ...(usage.cachedInputTokens > 0 ? { cachedContentTokenCount: usage.cachedInputTokens } : {}),
  };
}

export interface GeminiEncoder {
  /** The chunks one delta becomes (none for most: a text delta is one). */
  chunks(delta: Delta): GenerateContentResponse[];
}

/** A tool call being assembled: Gemini sends function calls whole, so pieces wait for the call's end. */
interface OpenCall {
  id: string;
  name: string;
  args: string;
  signature?: string;
}

function parsedArgs(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text === "" ? "{}" : text) as unknown;
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : { value };
  } catch {
    // A provider that streamed malformed arguments: the caller sees them as text rather than nothing.
    return { arguments: text };
  }
}

/**
 * Deltas as streamGenerateContent chunks, one encoder per response. Text
 * and thoughts go out as they come; thought text only when the caller
 * asked for it (includeThoughts), signatures always (marked by the wire
 * that issued them, thought-signatures.ts). Function calls are held until
 * the answer finishes and sent whole, with their id, parsed args and
 * signature, in the chunk that carries finishReason and usageMetadata.
 * modelVersion is the alias the caller asked for.
 */
export function createGeminiEncoder(options: { readonly requestModel: string; readonly includeThoughts: boolean; readonly servedKind: () => ProviderKind | undefined }): GeminiEncoder {
  let responseId = "";
  let usage: Usage | undefined;
  // What the last content delta was: a bare signature signs it, and goes out as a part of its kind (Gemini signs text parts too).
  let after: "text" | "thought" = "text";
  const calls = new Map<number, OpenCall>();
  const chunk = (parts: GeminiPart[]): GenerateContentResponse => ({ candidates: [{ content: { role: "model", parts }, index: 0 }], modelVersion: options.requestModel, responseId });
  const mark = (signature: string) => signatureForCaller(signature, options.servedKind());
  return {
    chunks(delta) {
      switch (delta.type) {
        case "start":
          responseId = delta.responseId;
          return [];
        case "text":
          if (delta.text === "") return [];
          after = "text";
          return [chunk([{ text: delta.text }])];
        case "reasoning": {
          if (delta.text !== "") after = "thought";
          const shown = options.includeThoughts && delta.text !== "";
          if (!shown && delta.signature === undefined) return [];
          const signature = delta.signature === undefined ? {} : { thoughtSignature: mark(delta.signature) };
          // A bare signature after text is the text's (as Gemini ends a stream with `{text: "", thoughtSignature}`); after thoughts, the thoughts'.
          if (!shown && after === "text") return [chunk([{ text: "", ...signature }])];
          return [chunk([{ text: shown ? delta.text : "", thought: true, ...signature }])];
        }
        case "tool_call": {
          const open = calls.get(delta.index) ?? { id: "", name: "", args: "" };
          if (delta.id) open.id = delta.id;
          if (delta.name) open.name = delta.name;
          if (delta.signature) open.signature = delta.signature;
          open.args += delta.arguments;
          calls.set(delta.index, open);
          return [];
        }
        case "usage":
          usage = delta;
          return [];
        case "logprobs":
        // A hosted tool's item (a web search) has no place in a Gemini answer, nor has a tool the gateway ran (its result is in the text).
        case "hosted_item":
        case "gateway_tool":
          return [];
        case "finish": {
          const parts: GeminiPart[] = [...calls.values()].map((c) => ({
            functionCall: { id: c.id, name: c.name, args: parsedArgs(c.args) },
            ...(c.signature === undefined ? {} : { thoughtSignature: mark(c.signature) }),
          }));
          const last = chunk(parts);
          last.candidates[0]!.finishReason = geminiFinishReason(delta.reason);
          if (usage) last.usageMetadata = usageMetadata(usage);
          return [last];
        }
      }
    },
  };
}

/**
 * The chunks of a stream as one GenerateContentResponse: parts in order,
 * neighbouring text (or thought text) parts joined unless a signature sits
 * between, the last chunk's finishReason and usage.
 */
export function joinChunks(chunks: readonly GenerateContentResponse[], requestModel: string): GenerateContentResponse {
  const parts: GeminiPart[] = [];
  let finishReason: string | undefined;
  let usage: UsageMetadata | undefined;
  let responseId = "";
  for (const c of chunks) {
    responseId = c.responseId || responseId;
    const candidate = c.candidates[0];
    if (candidate?.finishReason) finishReason = candidate.finishReason;
    if (c.usageMetadata) usage = c.usageMetadata;
    for (const p of candidate?.content.parts ?? []) {
      const prev = parts.at(-1);
      if (prev && p.text !== undefined && prev.text !== undefined && !prev.functionCall && prev.thoughtSignature === undefined && prev.thought === p.thought) {
        prev.text += p.text;
        if (p.thoughtSignature !== undefined) prev.thoughtSignature = p.thoughtSignature;
      } else parts.push({ ...p });
    }
  }
  return {
    candidates: [{ content: { role: "model", parts }, index: 0, ...(finishReason ? { finishReason } : {}) }],
    ...(usage ? { usageMetadata: usage } : {}),
    modelVersion: requestModel,
    responseId,
  };
}
