import { GatewayError } from "../../core/errors.js";
import type { EmbeddingAdapter } from "../embedding-adapter.js";
import { malformedAnswer, vectorFrom } from "../embedding-adapter.js";

/**
 * Gemini's `batchEmbedContents`, one request per input. It takes text only
 * and reports no token count (the gateway counts).
 */
export const geminiEmbeddings: EmbeddingAdapter = {
  buildRequest(request, target) {
    const key = target.provider.apiKey;
    const model = `models/${target.model}`;
    const requests = request.inputs.map((input, i) => {
      if (typeof input !== "string") throw new GatewayError("invalid_request", `provider ${target.provider.name} (Gemini) embeds text only, not token arrays`, { field: `input[${i}]` });
      return { model, content: { parts: [{ text: input }] }, ...(request.dimensions === undefined ? {} : { outputDimensionality: request.dimensions }) };
    });
    return {
      url: `${target.provider.baseUrl}/models/${encodeURIComponent(target.model)}:batchEmbedContents`,
      headers: { "content-type": "application/json", accept: "application/json", ...(key ? { "x-goog-api-key": key.reveal() } : {}) },
      body: JSON.stringify({ requests }),
    };
  },
  readAnswer(body, request, target) {
    const embeddings = (body as { embeddings?: unknown } | null)?.embeddings;
    if (!Array.isArray(embeddings) || embeddings.length !== request.inputs.length) throw malformedAnswer(target, `expected ${request.inputs.length} embeddings`);
    return { vectors: embeddings.map((e: { values?: unknown }, i) => vectorFrom(e?.values, target, `embeddings[${i}].values`)) };
  },
};
