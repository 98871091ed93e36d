import type { ChatResult } from "../../core/aggregate.js";
import type { ContentDelta, Delta, FinishReason, TokenLogprob, TopLogprob, Usage } from "../../core/delta.js";

/** Our finish reasons in OpenAI's vocabulary; reasons it has no word for read as "stop". */
const FINISH: Record<FinishReason, string> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool_calls",
  content_filter: "content_filter",
  other: "stop",
  unspecified: "stop",
};

function usage(u: Usage): Record<string, unknown> {
  return {
    prompt_tokens: u.inputTokens,
    completion_tokens: u.outputTokens,
    total_tokens: u.inputTokens + u.outputTokens,
    // cache_write_tokens (OpenRouter's name) and its split: Sluice extensions, 0 unless the provider reports writes (Anthropic).
    prompt_tokens_details: { cached_tokens: u.cachedInputTokens, ...cacheWrites(u) },
    completion_tokens_details: { reasoning_tokens: u.reasoningTokens },
    // Sluice extension: the provider reported no usage and the gateway counted it.
    ...(u.estimated ? { estimated: true } : {}),
  };
}

/** Prompt tokens written to the provider's cache: in all, and by lifetime. */
function cacheWrites(u: Usage): { cache_write_tokens: number; cache_write_5m_tokens: number; cache_write_1h_tokens: number } {
  const written5m = u.cacheWrite5mTokens ?? 0;
  const written1h = u.cacheWrite1hTokens ?? 0;
  return { cache_write_tokens: written5m + written1h, cache_write_5m_tokens: written5m, cache_write_1h_tokens: written1h };
}

function topLogprob(t: TopLogprob): Record<string, unknown> {
  return { token: t.token, logprob: t.logprob, bytes: t.bytes ? [...t.bytes] : null };
}

/** OpenAI's `choices[].logprobs` object for these tokens. */
function logprobs(tokens: readonly TokenLogprob[]): Record<string, unknown> {
  return { content: tokens.map((t) => ({ ...topLogprob(t), top_logprobs: t.topLogprobs.map(topLogprob) })), refusal: null };
}

const TEXT_SUFFIX = Buffer.from(`},"logprobs":null,"finish_reason":null}]}\n\n`);

function completionId(responseId: string): string {
  return `chatcmpl-${responseId}`;
}

/**
 * The facade's only delta conversion: deltas in, `chat.completion.chunk`
 * objects out. One per stream: it remembers the response id and holds usage
 * until the finish chunk, after which OpenAI sends it.
 */
export interface ChunkEncoder {
  encode(delta: Delta): readonly object[];
  /**
   * The delta's SSE events (`data: <chunk>\n\n` each), handed to `into` in
   * parts: the same bytes as JSON.stringify of encode()'s chunks. A text
   * delta, the one that comes by the thousand, is its JSON string between a
   * per-stream prefix and suffix encoded once, instead of a chunk object
   * built, serialised and joined per delta.
   */
  events(delta: Delta, into: (part: string | Uint8Array) => void): void;
}

export interface ChunkEncoderOptions {
  readonly includeUsage: boolean;
  /**
   * The model alias the client named: every chunk's `model` (docs/streams.md,
   * "The model an answer names"). Absent only for a resumed stream stored
   * without it, which then names the model that served it.
   */
  readonly model?: string;
}

export function createChunkEncoder(options: ChunkEncoderOptions): ChunkEncoder {
  let id = "";
  let model = options.model ?? "";
  const created = Math.floor(Date.now() / 1000);
  let pendingUsage: Usage | undefined;

  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null, tokenLogprobs: Record<string, unknown> | null = null) => ({
    id,
    object: "chat.completion.chunk",
    created,
    model,
    choices: [{ index: 0, delta, logprobs: tokenLogprobs, finish_reason: finishReason }],
  });

  function content(delta: Exclude<ContentDelta, { type: "usage" | "finish" | "logprobs" | "reasoning" | "hosted_item" | "gateway_tool" }>): Record<string, unknown> {
    switch (delta.type) {
      case "text":
        return { content: delta.text };
      case "tool_call":
        return {
          tool_calls: [
            {
              index: delta.index,
              ...(delta.id ? { id: delta.id, type: "function" } : {}),
              function: { ...(delta.name ? { name: delta.name } : {}), arguments: delta.arguments },
            },
          ],
        };
    }
  }

  // The text chunk around its content, fixed once `start` gave the id and the model.
  let textPrefix: Uint8Array | undefined;
  const encode = (delta: Delta): readonly object[] => {
    switch (delta.type) {
      case "start":
        id = completionId(delta.responseId);
        model = options.model ?? delta.model;
        // chunk({ content }) as JSON.stringify writes it (test/openai-chunks.test.ts compares the bytes).
        textPrefix = Buffer.from(`data: {"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"choices":[{"index":0,"delta":{"content":`);
        return [chunk({ role: "assistant", content: "" })];
      case "usage":
        pendingUsage = delta;
        return [];
      case "reasoning":
        // Signatures and redacted reasoning have no field in OpenAI's shape: the facade keeps them (replay-turns.ts).
        return delta.text === "" ? [] : [chunk({ reasoning_content: delta.text })];
      case "logprobs":
        return [chunk({}, null, logprobs(delta.tokens))];
      case "hosted_item":
      case "gateway_tool":
        // Chat Completions has no item for a search the provider ran, nor for a tool the gateway ran: the answer's text is what it shows.
        return [];
      case "finish": {
        const out: object[] = [chunk({}, FINISH[delta.reason])];
        if (options.includeUsage && pendingUsage) {
          out.push({ id, object: "chat.completion.chunk", created, model, choices: [], usage: usage(pendingUsage) });
        }
        return out;
      }
      default:
        return [chunk(content(delta))];
    }
  };

  return {
    encode,
    events(delta, into) {
      if (delta.type === "text" && textPrefix) {
        into(textPrefix);
        into(JSON.stringify(delta.text));
        into(TEXT_SUFFIX);
        return;
      }
      for (const c of encode(delta)) into(`data: ${JSON.stringify(c)}\n\n`);
    },
  };
}

/** A whole answer as a `chat.completion` object; its `model` is the alias the client named (`requestModel`), as on every HTTP edge. */
export function completionFromResult(result: ChatResult, requestModel: string): object {
  return {
    id: completionId(result.responseId),
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: requestModel,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: result.text === "" && result.toolCalls.length > 0 ? null : result.text,
          ...(result.reasoning ? { reasoning_content: result.reasoning } : {}),
          ...(result.toolCalls.length > 0 ? { tool_calls: result.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) } : {}),
        },
        logprobs: result.logprobs.length > 0 ? logprobs(result.logprobs) : null,
        finish_reason: FINISH[result.finishReason],
      },
    ],
    ...(result.usage ? { usage: usage(result.usage) } : {}),
  };
}
