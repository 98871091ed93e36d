import { anthropicAdapter } from "../anthropic/anthropic-adapter.js";
import { anthropicStreamHeaders, anthropicWireBody } from "../anthropic/anthropic-request.js";
import { geminiAdapter } from "../gemini/gemini-adapter.js";
import { geminiStreamRequest } from "../gemini/gemini-request.js";
import type { ProviderAdapter, UpstreamRequest, UpstreamTarget } from "../provider.js";
import { errorFromResponse } from "../upstream-errors.js";
import { vertexAccessToken } from "./vertex-credentials.js";
import { publisherOf, vertexModelUrl } from "./vertex-publisher.js";

/** The body version Anthropic's models on Vertex take, in the body instead of the `anthropic-version` header. */
export const VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16";

/** Claude on Vertex: the Messages body without `model` (it is in the URL), with Vertex's `anthropic_version`. */
function anthropicOnVertex(request: Parameters<ProviderAdapter["buildRequest"]>[0], target: UpstreamTarget): UpstreamRequest {
  const { model: _inUrl, ...body } = anthropicWireBody(request, target);
  return {
    url: vertexModelUrl(target, "streamRawPredict"),
    headers: anthropicStreamHeaders(request),
    body: JSON.stringify({ anthropic_version: VERTEX_ANTHROPIC_VERSION, ...body }),
  };
}

/** The publisher's own adapter, for what Vertex leaves as it is: parameters, the stream, hosted tools. */
const wireOf = (target: UpstreamTarget): ProviderAdapter => (publisherOf(target) === "anthropic" ? anthropicAdapter : geminiAdapter);

/**
 * Google Vertex AI: Gemini (`streamGenerateContent`) and Claude
 * (`streamRawPredict`) under one project and location, with an OAuth
 * bearer token from a service account or Application Default Credentials.
 * The bodies and the streams are the publishers' own wires.
 */
export const vertexAdapter: ProviderAdapter = {
  unsupportedParams: (request, target) => wireOf(target).unsupportedParams(request, target),
  buildRequest: (request, target) => (publisherOf(target) === "anthropic" ? anthropicOnVertex(request, target) : geminiStreamRequest(request, `${vertexModelUrl(target, "streamGenerateContent")}?alt=sse`, {})),
  createTranslator: (target, request) => wireOf(target).createTranslator(target, request),
  errorFromResponse,
  async authorize(request, target, signal) {
    const token = await vertexAccessToken(target.provider, signal);
    return { ...request, headers: { ...request.headers, authorization: `Bearer ${token}` } };
  },
};
