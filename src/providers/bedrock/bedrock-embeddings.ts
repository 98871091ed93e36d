import { GatewayError } from "../../core/errors.js";
import { type EmbeddingAdapter, malformedAnswer, vectorFrom } from "../embedding-adapter.js";
import type { UpstreamTarget } from "../provider.js";
import { signBedrockRequest } from "./sigv4.js";

/** Cohere on Bedrock takes at most this many texts in one call. */
const COHERE_MAX_TEXTS = 96;

const isCohere = (target: UpstreamTarget): boolean => /(?:^|[./])cohere\.embed/.test(target.model);

function textOnly(input: unknown, i: number, target: UpstreamTarget): string {
  if (typeof input !== "string") throw new GatewayError("invalid_request", `provider ${target.provider.name} (Bedrock) embeds text only, not token arrays`, { field: `input[${i}]` });
  return input;
}

/**
 * Embeddings through Bedrock's InvokeModel (`/model/{id}/invoke`), signed
 * like chat. Titan Text Embeddings (`amazon.titan-embed-text-v2:0`) takes one
 * text per call, with `dimensions`, and counts its tokens; Cohere Embed
 * (`cohere.embed-…`) takes up to 96 texts (as documents to search) and
 * counts none (the gateway counts).
 */
export const bedrockEmbeddings: EmbeddingAdapter = {
  buildRequest(request, target) {
    const texts = request.inputs.map((input, i) => textOnly(input, i, target));
    let body: Record<string, unknown>;
    if (isCohere(target)) {
      if (texts.length > COHERE_MAX_TEXTS) throw new GatewayError("invalid_request", `provider ${target.provider.name} (Cohere on Bedrock) embeds at most ${COHERE_MAX_TEXTS} inputs per request`, { field: "input" });
      if (request.dimensions !== undefined) throw new GatewayError("invalid_request", `dimensions: not supported by ${target.model} on provider ${target.provider.name}`, { field: "dimensions" });
      body = { texts, input_type: "search_document" };
    } else {
      if (texts.length !== 1) throw new GatewayError("invalid_request", `provider ${target.provider.name} (Titan on Bedrock) embeds one input per request`, { field: "input" });
      body = { inputText: texts[0], ...(request.dimensions === undefined ? {} : { dimensions: request.dimensions }) };
    }
    return {
      url: `${target.provider.baseUrl}/model/${encodeURIComponent(target.model)}/invoke`,
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
    };
  },
  readAnswer(body, request, target) {
    const answer = (body ?? {}) as { embedding?: unknown; inputTextTokenCount?: unknown; embeddings?: unknown };
    if (isCohere(target)) {
      // embedding_types unset: a plain list of float vectors.
      if (!Array.isArray(answer.embeddings) || answer.embeddings.length !== request.inputs.length) throw malformedAnswer(target, `expected ${request.inputs.length} embeddings`);
      return { vectors: answer.embeddings.map((e: unknown, i) => vectorFrom(e, target, `embeddings[${i}]`)) };
    }
    const tokens = answer.inputTextTokenCount;
    return { vectors: [vectorFrom(answer.embedding, target, "embedding")], ...(typeof tokens === "number" && Number.isInteger(tokens) && tokens >= 0 ? { inputTokens: tokens } : {}) };
  },
  authorize: (request, target, signal) => signBedrockRequest(request, target.provider, signal),
};
