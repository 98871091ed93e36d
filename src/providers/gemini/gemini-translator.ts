import { randomBytes } from "node:crypto";
import type { ContentDelta, FinishReason, TokenLogprob, UsageDelta } from "../../core/delta.js";
import { GatewayError } from "../../core/errors.js";
import type { StreamTranslator, UpstreamTarget } from "../provider.js";
import { errorFromInBand } from "../upstream-errors.js";

interface Part {
  text?: unknown;
  thought?: unknown;
  thoughtSignature?: unknown;
  functionCall?: { id?: unknown; name?: unknown; args?: unknown };
}

interface LogprobCandidate {
  token?: unknown;
  logProbability?: unknown;
}

interface LogprobsResult {
  chosenCandidates?: unknown;
  topCandidates?: unknown;
}

interface GeminiChunk {
  candidates?: Array<{
    content?: { parts?: Part[] };
    finishReason?: unknown;
    index?: unknown;
    logprobsResult?: LogprobsResult;
    /** Google Search grounding: the queries the model searched for this answer. */
    groundingMetadata?: { webSearchQueries?: unknown };
  }>;
  usageMetadata?: {
    promptTokenCount?: unknown;
    candidatesTokenCount?: unknown;
    cachedContentTokenCount?: unknown;
    thoughtsTokenCount?: unknown;
  };
  promptFeedback?: { blockReason?: unknown };
  error?: { status?: unknown };
}

function candidateLogprob(c: LogprobCandidate): { token: string; logprob: number } {
  return { token: typeof c.token === "string" ? c.token : "", logprob: typeof c.logProbability === "number" ? c.logProbability : 0 };
}

/** `logprobsResult`: chosen tokens, with the alternatives at the same position. */
export function geminiLogprobs(result: LogprobsResult): TokenLogprob[] {
  if (!Array.isArray(result.chosenCandidates)) return [];
  const top = Array.isArray(result.topCandidates) ? (result.topCandidates as Array<{ candidates?: unknown }>) : [];
  return (result.chosenCandidates as LogprobCandidate[]).map((chosen, i) => {
    const alternatives = top[i]?.candidates;
    return { ...candidateLogprob(chosen), topLogprobs: Array.isArray(alternatives) ? (alternatives as LogprobCandidate[]).map(candidateLogprob) : [] };
  });
}

const count = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);

/** Gemini finish reasons in our vocabulary; a STOP after function calls is a tool-call stop. */
export function geminiFinishReason(value: string, calledTools: boolean): FinishReason {
  switch (value) {
    case "STOP":
      return calledTools ? "tool_calls" : "stop";
    case "MAX_TOKENS":
      return "length";
    case "SAFETY":
    case "RECITATION":
    case "BLOCKLIST":
    case "PROHIBITED_CONTENT":
    case "SPII":
    case "IMAGE_SAFETY":
      return "content_filter";
    case "FINISH_REASON_UNSPECIFIED":
      return "unspecified";
    default:
      return "other";
  }
}

function usageDelta(u: NonNullable<GeminiChunk["usageMetadata"]>): UsageDelta {
  const thoughts = count(u.thoughtsTokenCount);
  return {
    type: "usage",
    inputTokens: count(u.promptTokenCount),
    // candidatesTokenCount excludes thinking; our output count includes it.
    outputTokens: count(u.candidatesTokenCount) + thoughts,
    cachedInputTokens: count(u.cachedContentTokenCount),
    reasoningTokens: thoughts,
  };
}

interface StreamState {
  toolCount: number;
  finish?: FinishReason;
  usage?: UsageDelta;
  /** Distinct grounding queries seen (a chunk may repeat them): the searches `price.perWebSearch` counts. */
  searches: Set<string>;
}

/**
 * streamGenerateContent chunks → deltas. Gemini sends whole function calls:
 * each becomes one tool-call delta carrying all its arguments, with the
 * provider's id or a synthesized one. There is no end sentinel: the body
 * ending after a finishReason is the end; before one, the stream was cut.
 */
export function createGeminiTranslator(target: UpstreamTarget): StreamTranslator {
  const provider = target.provider.name;
  const state: StreamState = { toolCount: 0, searches: new Set() };
  const malformed = (cause?: unknown) => new GatewayError("upstream_protocol", `provider ${provider} sent a malformed event`, { provider, cause });

  return {
    event(sse) {
      let chunk: GeminiChunk;
      try {
        chunk = JSON.parse(sse.data) as GeminiChunk;
      } catch (cause) {
        throw malformed(cause);
      }
      if (chunk === null || typeof chunk !== "object" || Array.isArray(chunk)) throw malformed();
      if (chunk.error) throw errorFromInBand(provider, [chunk.error.status]);
      if (chunk.usageMetadata) state.usage = usageDelta(chunk.usageMetadata);
      if (chunk.promptFeedback?.blockReason) state.finish = "content_filter";
      const candidate = chunk.candidates?.find((c) => count(c.index) === 0);
      const out: ContentDelta[] = [];
      for (const part of candidate?.content?.parts ?? []) {
        const signature = typeof part.thoughtSignature === "string" && part.thoughtSignature !== "" ? part.thoughtSignature : undefined;
        const text = typeof part.text === "string" ? part.text : "";
        const call = part.functionCall;
        if (call) {
          if (typeof call.name !== "string") throw malformed();
          out.push({
            type: "tool_call",
            index: state.toolCount++,
            // A synthesized id is also the facade's key to the call's signature: unguessable.
            id: typeof call.id === "string" && call.id !== "" ? call.id : `call_${randomBytes(16).toString("base64url")}`,
            name: call.name,
            arguments: JSON.stringify(call.args ?? {}),
            ...(signature === undefined ? {} : { signature }),
          });
        } else if (part.thought === true) {
          if (text !== "" || signature !== undefined) out.push({ type: "reasoning", text, ...(signature === undefined ? {} : { signature }) });
        } else {
          if (text !== "") out.push({ type: "text", text });
          // Gemini signs text parts too; the signature travels as reasoning so it can be replayed.
          if (signature !== undefined) out.push({ type: "reasoning", text: "", signature });
        }
      }
      const logprobs = candidate?.logprobsResult ? geminiLogprobs(candidate.logprobsResult) : [];
      if (logprobs.length > 0) out.push({ type: "logprobs", tokens: logprobs });
      if (typeof candidate?.finishReason === "string") state.finish = geminiFinishReason(candidate.finishReason, state.toolCount > 0);
      const queries = candidate?.groundingMetadata?.webSearchQueries;
      if (Array.isArray(queries)) for (const q of queries) if (typeof q === "string" && state.searches.size < 1_000) state.searches.add(q);
      return out;
    },
    end() {
      if (state.finish === undefined) {
        throw new GatewayError("upstream_protocol", `provider ${provider} ended the stream before it was complete`, { provider });
      }
      const usage = state.usage && state.searches.size > 0 ? { ...state.usage, webSearches: state.searches.size } : state.usage;
      return usage ? [usage, { type: "finish", reason: state.finish }] : [{ type: "finish", reason: state.finish }];
    },
  };
}
