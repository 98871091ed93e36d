import { GatewayError } from "../../core/errors.js";
import type { EmbeddingAdapter } from "../embedding-adapter.js";
import { malformedAnswer, vectorFrom } from "../embedding-adapter.js";
import { vertexAccessToken } from "./vertex-credentials.js";
import { publisherOf, vertexModelUrl } from "./vertex-publisher.js";

interface Prediction {
  readonly embeddings?: { readonly values?: unknown; readonly statistics?: { readonly token_count?: unknown } };
}

/**
 * Vertex AI's text embedding models (`text-embedding-005`,
 * `gemini-embedding-001`, …) through `:predict`: one instance per input,
 * text only; the token count is the sum of each prediction's.
 */
export const vertexEmbeddings: EmbeddingAdapter = {
  buildRequest(request, target) {
    if (publisherOf(target) !== "google") throw new GatewayError("invalid_request", `provider ${target.provider.name} serves Anthropic models on Vertex, which do not embed`);
    const instances = request.inputs.map((input, i) => {
      if (typeof input !== "string") throw new GatewayError("invalid_request", `provider ${target.provider.name} (Vertex AI) embeds text only, not token arrays`, { field: `input[${i}]` });
      return { content: input };
    });
    return {
      url: vertexModelUrl(target, "predict"),
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ instances, ...(request.dimensions === undefined ? {} : { parameters: { outputDimensionality: request.dimensions } }) }),
    };
  },
  readAnswer(body, request, target) {
    const predictions = (body as { predictions?: unknown } | null)?.predictions;
    if (!Array.isArray(predictions) || predictions.length !== request.inputs.length) throw malformedAnswer(target, `expected ${request.inputs.length} predictions`);
    let tokens = 0;
    let counted = true;
    const vectors = (predictions as Prediction[]).map((p, i) => {
      const count = p?.embeddings?.statistics?.token_count;
      if (typeof count === "number" && Number.isInteger(count) && count >= 0) tokens += count;
      else counted = false;
      return vectorFrom(p?.embeddings?.values, target, `predictions[${i}].embeddings.values`);
    });
    return { vectors, ...(counted ? { inputTokens: tokens } : {}) };
  },
  async authorize(request, target, signal) {
    const token = await vertexAccessToken(target.provider, signal);
    return { ...request, headers: { ...request.headers, authorization: `Bearer ${token}` } };
  },
};
