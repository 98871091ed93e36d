import type { EmbedRequest } from "../../core/embed-request.js";
import type { EmbeddingAdapter } from "../embedding-adapter.js";
import { malformedAnswer, vectorFrom } from "../embedding-adapter.js";

/** The `POST /embeddings` body, shared with Azure's deployment-scoped route. */
export function openAiEmbeddingsBody(request: EmbedRequest, model: string): Record<string, unknown> {
  return {
    model,
    input: request.inputs,
    encoding_format: "float",
    ...(request.dimensions === undefined ? {} : { dimensions: request.dimensions }),
    ...(request.user === undefined ? {} : { user: request.user }),
  };
}

/**
 * Any server with OpenAI's `POST /embeddings`: OpenAI, vLLM, Ollama,
 * llama.cpp. Vectors are asked for as JSON numbers, the one encoding every
 * compatible server has; an edge re-encodes them if its caller asked for base64.
 */
export const openAiEmbeddings: EmbeddingAdapter = {
  buildRequest(request, target) {
    const key = target.provider.apiKey;
    return {
      url: `${target.provider.baseUrl}/embeddings`,
      headers: { "content-type": "application/json", accept: "application/json", ...(key ? { authorization: `Bearer ${key.reveal()}` } : {}) },
      body: JSON.stringify(openAiEmbeddingsBody(request, target.model)),
    };
  },
  readAnswer(body, request, target) {
    const data = (body as { data?: unknown } | null)?.data;
    if (!Array.isArray(data) || data.length !== request.inputs.length) throw malformedAnswer(target, `expected ${request.inputs.length} embeddings`);
    const vectors = new Array<Float32Array>(data.length);
    for (const [i, item] of data.entries()) {
      const index = (item as { index?: unknown }).index ?? i;
      if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= data.length || vectors[index as number]) throw malformedAnswer(target, `data[${i}].index is not a free input index`);
      vectors[index as number] = vectorFrom((item as { embedding?: unknown }).embedding, target, `data[${i}].embedding`);
    }
    const promptTokens = (body as { usage?: { prompt_tokens?: unknown } }).usage?.prompt_tokens;
    return { vectors, ...(Number.isInteger(promptTokens) && (promptTokens as number) >= 0 ? { inputTokens: promptTokens as number } : {}) };
  },
};
