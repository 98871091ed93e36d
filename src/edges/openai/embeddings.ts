import { z } from "zod";
import type { CallLayer } from "../../call/call-layer.js";
import { clipClientValue } from "../../core/client-text.js";
import { type EmbedRequest, type EmbedResult, validateEmbedRequest } from "../../core/embed-request.js";
import { GatewayError } from "../../core/errors.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson } from "../../http/node-http.js";
import type { BodyLimits } from "../../http/read-body.js";
import { beginHttpCall, httpCall } from "../sse/http-call.js";
import { sendOpenAiError } from "./http-errors.js";

const tokens = z.array(z.number().int().nonnegative());
const body = z.object({
  model: z.string(),
  input: z.union([z.string(), z.array(z.string()), tokens, z.array(tokens)]),
  dimensions: z.number().int().nullish(),
  encoding_format: z.enum(["float", "base64"]).nullish(),
  user: z.string().nullish(),
});

/** A `POST /v1/embeddings` body, decoded: the canonical request and how the caller wants its vectors. */
export interface OpenAiEmbedRequest {
  readonly request: EmbedRequest;
  readonly encoding: "float" | "base64";
}

/** OpenAI's `input` forms as a list of inputs: one string, strings, one token array, token arrays. */
function inputsOf(input: z.infer<typeof body>["input"]): EmbedRequest["inputs"] {
  if (typeof input === "string") return [input];
  if (input.length > 0 && typeof input[0] === "number") return [input as number[]];
  return input as string[] | number[][];
}

/** Decodes and checks an embeddings body; errors name OpenAI's parameters. */
export function embedRequestFromOpenAi(json: unknown): OpenAiEmbedRequest {
  const parsed = body.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = clipClientValue(issue.path.map(String).join("."));
    throw new GatewayError("invalid_request", `${field || "request body"}: ${clipClientValue(issue.message)}`, { field: field || "body" });
  }
  const b = parsed.data;
  const request = validateEmbedRequest(
    {
      model: b.model,
      inputs: inputsOf(b.input),
      ...(b.dimensions === null || b.dimensions === undefined ? {} : { dimensions: b.dimensions }),
      ...(b.user ? { user: b.user } : {}),
    },
    { inputs: "input", dimensions: "dimensions" },
  );
  return { request, encoding: b.encoding_format ?? "float" };
}

/**
 * A float32 as the shortest decimal that reads back as the same float32
 * (nine significant digits always do): printed as a double it would take
 * seventeen, near twice the bytes, for digits that mean nothing.
 */
function float32Number(x: number): number {
  return Number(x.toPrecision(9));
}

/** The OpenAI list of embeddings; base64 is the vector's little-endian float32 bytes, as OpenAI sends it. */
export function openAiEmbeddingsBody(result: EmbedResult, alias: string, encoding: "float" | "base64"): unknown {
  return {
    object: "list",
    data: result.vectors.map((vector, index) => ({
      object: "embedding",
      index,
      embedding: encoding === "base64" ? Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString("base64") : Array.from(vector, float32Number),
    })),
    model: alias,
    usage: { prompt_tokens: result.inputTokens, total_tokens: result.inputTokens },
  };
}

/** `POST /v1/embeddings`: the official SDKs' `embeddings.create`, through the same admission as a chat call. */
export async function embeddings(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: { readonly calls: CallLayer; readonly limits: BodyLimits & StructureLimits }): Promise<void> {
  const begun = await beginHttpCall(req, res, exchange, { ...options, credential: headerOf(req, "authorization"), refuse: sendOpenAiError }, embedRequestFromOpenAi);
  if (!begun) return;
  const { request, encoding } = begun.parsed;
  const call = options.calls.embed(request, begun.principal, httpCall(exchange, "openai-embeddings", begun.tags));
  try {
    const result = await call.result;
    exchange.code = "ok";
    sendJson(res, 200, openAiEmbeddingsBody(result, request.model, encoding), call.quota());
  } catch (error) {
    if (!exchange.signal.aborted) sendOpenAiError(res, exchange, error, call.quota());
  }
}
