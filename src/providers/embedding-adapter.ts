import type { EmbedRequest } from "../core/embed-request.js";
import { GatewayError } from "../core/errors.js";
import type { UpstreamRequest, UpstreamTarget } from "./provider.js";

/** What one provider answered to an embedding request. */
export interface EmbeddingAnswer {
  /** One per input, in input order. */
  readonly vectors: Float32Array[];
  /** Absent when the provider reports no token count. */
  readonly inputTokens?: number;
}

/**
 * A provider's embeddings API: how to ask, and how to read a 2xx answer. A
 * refusal reads as a chat refusal does (upstream-errors.ts): the providers
 * use one error shape across their APIs.
 */
export interface EmbeddingAdapter {
  /** Throws `invalid_request` for what this API cannot take (token arrays on Gemini). */
  buildRequest(request: EmbedRequest, target: UpstreamTarget): UpstreamRequest;
  /** Throws `upstream_protocol` when the body is not the answer it should be. */
  readAnswer(body: unknown, request: EmbedRequest, target: UpstreamTarget): EmbeddingAnswer;
  /** As ProviderAdapter.authorize: signing or a fresh token, after the request is built. */
  authorize?(request: UpstreamRequest, target: UpstreamTarget, signal: AbortSignal): Promise<UpstreamRequest>;
}

/** An answer that is not what the API promises. */
export function malformedAnswer(target: UpstreamTarget, what: string): GatewayError {
  return new GatewayError("upstream_protocol", `provider ${target.provider.name} sent a malformed embeddings answer: ${what}`, { provider: target.provider.name });
}

/**
 * A vector from JSON numbers, checked: a provider that sends a string or a
 * NaN where a number belongs must not reach a caller (or, later, an index).
 */
export function vectorFrom(values: unknown, target: UpstreamTarget, where: string): Float32Array {
  if (!Array.isArray(values) || values.length === 0) throw malformedAnswer(target, `${where} is not a list of numbers`);
  const vector = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const x: unknown = values[i];
    if (typeof x !== "number" || !Number.isFinite(x)) throw malformedAnswer(target, `${where}[${i}] is not a finite number`);
    vector[i] = x;
  }
  return vector;
}
