import type { ContentDelta, FinishReason, TokenLogprob, TopLogprob, UsageDelta } from "../../core/delta.js";
import { GatewayError } from "../../core/errors.js";
import type { StreamTranslator, UpstreamTarget } from "../provider.js";
import { errorFromInBand } from "../upstream-errors.js";

interface ChunkToolCall {
  index?: unknown;
  id?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}

interface ChunkUsage {
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
  prompt_tokens_details?: { cached_tokens?: unknown } | null;
  completion_tokens_details?: { reasoning_tokens?: unknown } | null;
}

interface Chunk {
  choices?: Array<{
    index?: unknown;
    delta?: { content?: unknown; reasoning_content?: unknown; reasoning?: unknown; tool_calls?: unknown } | null;
    finish_reason?: unknown;
    logprobs?: { content?: unknown } | null;
  }>;
  usage?: ChunkUsage | null;
  error?: { message?: unknown; type?: unknown; code?: unknown } | null;
}

interface WireLogprob {
  token?: unknown;
  logprob?: unknown;
  bytes?: unknown;
  top_logprobs?: unknown;
}

function topLogprob(w: WireLogprob): TopLogprob {
  return {
    token: typeof w.token === "string" ? w.token : "",
    logprob: typeof w.logprob === "number" ? w.logprob : 0,
    ...(Array.isArray(w.bytes) && w.bytes.every((b) => typeof b === "number") ? { bytes: w.bytes as number[] } : {}),
  };
}

/** `choices[].logprobs.content` entries as our token log probabilities. */
export function openAiLogprobs(content: unknown): TokenLogprob[] {
  if (!Array.isArray(content)) return [];
  return (content as WireLogprob[]).map((w) => ({
    ...topLogprob(w),
    topLogprobs: Array.isArray(w.top_logprobs) ? (w.top_logprobs as WireLogprob[]).map(topLogprob) : [],
  }));
}

const count = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);

/** OpenAI finish_reason values, plus the legacy function_call. */
export function openAiFinishReason(value: string): FinishReason {
  switch (value) {
    case "stop":
      return "stop";
    case "length":
      return "length";
    case "tool_calls":
    case "function_call":
      return "tool_calls";
    case "content_filter":
      return "content_filter";
    default:
      return "other";
  }
}

function usageDelta(u: ChunkUsage): UsageDelta {
  return {
    type: "usage",
    inputTokens: count(u.prompt_tokens),
    outputTokens: count(u.completion_tokens),
    cachedInputTokens: count(u.prompt_tokens_details?.cached_tokens),
    reasoningTokens: count(u.completion_tokens_details?.reasoning_tokens),
  };
}

type State = { readonly phase: "streaming"; readonly finish?: FinishReason; readonly usage?: UsageDelta } | { readonly phase: "done" };

/**
 * Chat Completions chunks → deltas. Usage arrives in a chunk after the one
 * carrying finish_reason, so the finish is held until `[DONE]` (or the end of
 * the body) and then emitted after usage: every stream ends usage, finish.
 */
export function createOpenAiTranslator(target: UpstreamTarget): StreamTranslator {
  const provider = target.provider.name;
  let state: State = { phase: "streaming" };

  function close(): ContentDelta[] {
    if (state.phase === "done") return [];
    const { finish, usage } = state;
    state = { phase: "done" };
    const out: ContentDelta[] = [];
    if (usage) out.push(usage);
    out.push({ type: "finish", reason: finish ?? "unspecified" });
    return out;
  }

  return {
    event(event) {
      if (state.phase === "done") return [];
      if (event.data === "[DONE]") return close();
      let chunk: Chunk;
      try {
        chunk = JSON.parse(event.data) as Chunk;
      } catch (cause) {
        throw new GatewayError("upstream_protocol", `provider ${provider} sent a malformed event`, { provider, cause });
      }
      if (chunk === null || typeof chunk !== "object" || Array.isArray(chunk)) {
        throw new GatewayError("upstream_protocol", `provider ${provider} sent a malformed event`, { provider });
      }
      if (chunk.error) throw errorFromInBand(provider, [chunk.error.code, chunk.error.type]);
      const out: ContentDelta[] = [];
      const choice = Array.isArray(chunk.choices) ? chunk.choices.find((c) => count(c.index) === 0) : undefined;
      const delta = choice?.delta;
      if (delta) {
        if (typeof delta.reasoning_content === "string" && delta.reasoning_content !== "") {
          out.push({ type: "reasoning", text: delta.reasoning_content });
        } else if (typeof delta.reasoning === "string" && delta.reasoning !== "") {
          out.push({ type: "reasoning", text: delta.reasoning });
        }
        if (typeof delta.content === "string" && delta.content !== "") out.push({ type: "text", text: delta.content });
        if (Array.isArray(delta.tool_calls)) {
          for (const call of delta.tool_calls as ChunkToolCall[]) {
            out.push({
              type: "tool_call",
              index: count(call.index),
              ...(typeof call.id === "string" && call.id !== "" ? { id: call.id } : {}),
              ...(typeof call.function?.name === "string" && call.function.name !== "" ? { name: call.function.name } : {}),
              arguments: typeof call.function?.arguments === "string" ? call.function.arguments : "",
            });
          }
        }
      }
      const logprobs = choice?.logprobs ? openAiLogprobs(choice.logprobs.content) : [];
      if (logprobs.length > 0) out.push({ type: "logprobs", tokens: logprobs });
      const finish = typeof choice?.finish_reason === "string" ? openAiFinishReason(choice.finish_reason) : state.finish;
      const usage = chunk.usage ? usageDelta(chunk.usage) : state.usage;
      state = { phase: "streaming", ...(finish ? { finish } : {}), ...(usage ? { usage } : {}) };
      return out;
    },
    end() {
      if (state.phase === "done") return [];
      // Some compatible servers omit [DONE]; a finish_reason is enough to
      // know the answer is whole. Without either, the stream was cut short.
      if (state.finish !== undefined) return close();
      throw new GatewayError("upstream_protocol", `provider ${provider} ended the stream before it was complete`, { provider });
    },
  };
}
