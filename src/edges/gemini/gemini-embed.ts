import type { EmbedRequest, EmbedResult } from "../../core/embed-request.js";
import { validateEmbedRequest } from "../../core/embed-request.js";
import { GatewayError } from "../../core/errors.js";
import { parseBody } from "./from-gemini.js";
import { batchEmbedContentsBody, type EmbedContentBody, embedContentBody } from "./gemini-schema.js";

/** The text of one embedContent request: its text parts joined (Gemini embeds a content's parts as one input). */
function inputOf(body: EmbedContentBody, at: string): string {
  const parts = body.content.parts ?? [];
  parts.forEach((p, j) => {
    if (p.text === undefined) throw new GatewayError("invalid_request", `${at}content.parts[${j}]: only text is embedded by this gateway`, { field: `${at}content.parts[${j}]` });
  });
  return parts.map((p) => p.text ?? "").join("");
}

/**
 * embedContent and batchEmbedContents as one canonical request: one input
 * per content. `taskType` and `title` are hints other providers have no
 * field for (dropped, named); `outputDimensionality` is the canonical
 * dimensions. Several requests must agree on it: one call asks once.
 */
export function embedRequestFromGemini(json: unknown, model: string, batch: boolean): { readonly request: EmbedRequest; readonly dropped: readonly string[] } {
  const bodies = batch ? parseBody(batchEmbedContentsBody, json).requests : [parseBody(embedContentBody, json)];
  const dropped = new Set<string>();
  const dims = new Set<number | undefined>(bodies.map((b) => b.outputDimensionality));
  if (dims.size > 1) throw new GatewayError("invalid_request", "requests[].outputDimensionality: must be the same for every request of one batch", { field: "requests[].outputDimensionality" });
  const prefix = (i: number) => (batch ? `requests[${i}].` : "");
  const inputs = bodies.map((b, i) => {
    if (b.taskType !== undefined) dropped.add(batch ? "requests[].taskType" : "taskType");
    if (b.title !== undefined) dropped.add(batch ? "requests[].title" : "title");
    return inputOf(b, prefix(i));
  });
  const dimensions = bodies[0]?.outputDimensionality;
  const request = validateEmbedRequest({ model, inputs, ...(dimensions === undefined ? {} : { dimensions }) }, { inputs: batch ? "requests" : "content", dimensions: "outputDimensionality" });
  return { request, dropped: [...dropped] };
}

/** The answer: `{embedding: {values}}` for one, `{embeddings: [...]}` for a batch. */
export function geminiEmbeddingsBody(result: EmbedResult, batch: boolean): unknown {
  const embeddings = result.vectors.map((v) => ({ values: Array.from(v, (x) => Number(x.toPrecision(9))) }));
  return batch ? { embeddings } : { embedding: embeddings[0] };
}
