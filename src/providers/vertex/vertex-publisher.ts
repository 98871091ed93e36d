import type { UpstreamTarget } from "../provider.js";

/** Whose model a Vertex target names: Google's (the Gemini wire) or Anthropic's (the Messages wire through rawPredict). */
export type VertexPublisher = "google" | "anthropic";

/** The publisher the provider's settings name, else by model id: Claude models are Anthropic's, every other one Google's. */
export function publisherOf(target: UpstreamTarget): VertexPublisher {
  return target.provider.vertex?.publisher ?? (target.model.startsWith("claude-") ? "anthropic" : "google");
}

/** A model id as a path segment: `@` stays (Vertex's Claude ids carry a version after it, `claude-sonnet-4-5@20250929`). */
export function modelSegment(model: string): string {
  return encodeURIComponent(model).replace(/%40/g, "@");
}

/** `{base}/publishers/{publisher}/models/{model}:{method}`, where every Vertex model method lives. */
export function vertexModelUrl(target: UpstreamTarget, method: string): string {
  return `${target.provider.baseUrl}/publishers/${publisherOf(target)}/models/${modelSegment(target.model)}:${method}`;
}
