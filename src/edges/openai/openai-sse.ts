import type { SseCodec } from "../sse/write-sse.js";
import { openAiParam, sendOpenAiError, toOpenAiError } from "./http-errors.js";
import type { ChunkEncoder } from "./to-openai.js";

/**
 * Chat Completions as SSE: `chat.completion.chunk` events, a comment as
 * heartbeat, `data: [DONE]` at the end, and after a failure an error event
 * and no `[DONE]`, so the SDKs raise instead of returning a truncated
 * answer. A resumable stream's delta carries its sequence on the `id:`
 * line of its last event.
 */
export function openAiSse(encoder: ChunkEncoder): SseCodec {
  return {
    events: (delta, push) => encoder.events(delta, push),
    numbered(item, push) {
      const chunks = encoder.encode(item.delta);
      for (let i = 0; i < chunks.length; i++) push(`${i === chunks.length - 1 ? `id: ${item.sequence}\n` : ""}data: ${JSON.stringify(chunks[i])}\n\n`);
    },
    heartbeat: ": keepalive\n\n",
    dropped: (params) => params.map(openAiParam),
    end: (push) => push("data: [DONE]\n\n"),
    failure: (error, push) => push(`data: ${JSON.stringify(toOpenAiError(error).body)}\n\n`),
    refuse: sendOpenAiError,
  };
}
