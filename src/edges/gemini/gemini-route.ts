import type { CallLayer } from "../../call/call-layer.js";
import { DROPPED_PARAMS_HEADER } from "../../call/call-layer.js";
import { cachePolicyFromHeader } from "../../core/cache-policy.js";
import { clipClientValue } from "../../core/client-text.js";
import type { Delta } from "../../core/delta.js";
import { GatewayError } from "../../core/errors.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson } from "../../http/node-http.js";
import type { BodyLimits } from "../../http/read-body.js";
import { countedInputTokens } from "../../usage/prompt-size.js";
import { answerWhole, beginHttpCall, httpCall } from "../sse/http-call.js";
import { writeSse } from "../sse/write-sse.js";
import { countTokensRequestFrom, geminiRequestFrom } from "./from-gemini.js";
import { embedRequestFromGemini, geminiEmbeddingsBody } from "./gemini-embed.js";
import { sendGoogleError } from "./gemini-errors.js";
import { credentialOf } from "./gemini-key.js";
import { geminiParam } from "./gemini-params.js";
import { arrayCodec, sseCodec } from "./gemini-streams.js";
import { createTargetFit } from "./target-fit.js";
import { createGeminiEncoder, type GenerateContentResponse, joinChunks } from "./to-gemini.js";

export interface GeminiOptions {
  readonly calls: CallLayer;
  readonly limits: BodyLimits & StructureLimits;
  /** Silence on a stream after which a keepalive is sent. */
  readonly keepaliveMs: number;
  readonly sendTimeoutMs: number;
}

function queryOf(req: AnyRequest, name: string): string | null {
  const query = (req.url ?? "").split("?")[1];
  return query === undefined ? null : new URLSearchParams(query).get(name);
}

type Shape = "whole" | "sse" | "array";

/**
 * `:generateContent` and `:streamGenerateContent` for any configured alias
 * (a Gemini client may be answered by an OpenAI or Anthropic target).
 * Thought signatures travel in the caller's own fields; each goes back
 * only to the wire that issued it (thought-signatures.ts).
 */
async function generate(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: GeminiOptions, model: string, shape: Shape): Promise<void> {
  const begun = await beginHttpCall(req, res, exchange, { ...options, credential: credentialOf(req), refuse: sendGoogleError }, (json) => geminiRequestFrom(json, model, options.limits));
  if (!begun) return;
  const { request, dropped, includeThoughts } = begun.parsed;
  const fit = createTargetFit(dropped);
  const streamed = shape !== "whole";
  const call = options.calls.stream(request, begun.principal, httpCall(exchange, `gemini-${shape === "whole" ? "json" : shape}`, begun.tags), {
    heartbeatMs: streamed ? options.keepaliveMs : 0,
    cachePolicy: cachePolicyFromHeader(headerOf(req, "cache-control")),
    prepare: fit.prepare,
  });
  const encoder = createGeminiEncoder({ requestModel: model, includeThoughts, servedKind: fit.servedKind });
  const encode = (delta: Delta) => encoder.chunks(delta);
  if (streamed) {
    return writeSse(res, exchange, call, shape === "sse" ? sseCodec(encode) : arrayCodec(encode), { sendTimeoutMs: options.sendTimeoutMs, droppedParams: fit.dropped });
  }
  return answerWhole(res, exchange, call, {
    answer: async (deltas) => {
      const chunks: GenerateContentResponse[] = [];
      let targetDropped: readonly string[] = [];
      for await (const delta of deltas) {
        if (delta.type === "start") targetDropped = delta.droppedParams ?? [];
        chunks.push(...encode(delta));
      }
      return { body: joinChunks(chunks, model), dropped: [...fit.dropped, ...targetDropped.map(geminiParam)] };
    },
    refuse: sendGoogleError,
  });
}

/**
 * `:countTokens`: the prompt's tokens as the gateway counts them (the same
 * estimate the Messages edge's count_tokens gives, usage/prompt-size.ts),
 * not forwarded: an alias may fail over between providers that count
 * differently.
 */
async function countTokens(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: GeminiOptions, model: string): Promise<void> {
  const begun = await beginHttpCall(req, res, exchange, { ...options, credential: credentialOf(req), refuse: sendGoogleError }, (json) => countTokensRequestFrom(json, model, options.limits));
  if (!begun) return;
  try {
    options.calls.checkAlias(begun.principal, model);
    const totalTokens = await countedInputTokens(begun.parsed);
    exchange.code = "ok";
    sendJson(res, 200, { totalTokens });
  } catch (error) {
    sendGoogleError(res, exchange, error);
  }
}

/** `:embedContent` and `:batchEmbedContents`, through the same admission as a chat call. */
async function embed(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: GeminiOptions, model: string, batch: boolean): Promise<void> {
  const begun = await beginHttpCall(req, res, exchange, { ...options, credential: credentialOf(req), refuse: sendGoogleError }, (json) => embedRequestFromGemini(json, model, batch));
  if (!begun) return;
  const call = options.calls.embed(begun.parsed.request, begun.principal, httpCall(exchange, "gemini-embeddings", begun.tags));
  try {
    const result = await call.result;
    exchange.code = "ok";
    const dropped = begun.parsed.dropped.join(",");
    sendJson(res, 200, geminiEmbeddingsBody(result, batch), { ...call.quota(), ...(dropped ? { [DROPPED_PARAMS_HEADER]: dropped } : {}) });
  } catch (error) {
    if (!exchange.signal.aborted) sendGoogleError(res, exchange, error, call.quota());
  }
}

/**
 * `POST /v1beta/models/{model}:{method}`: the method after the last colon
 * (a model id has none in Google's naming; an alias with one is still
 * found, as only the last colon splits).
 */
export async function geminiModelMethod(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: GeminiOptions, id: string): Promise<void> {
  res.setHeader("x-request-id", exchange.requestId);
  const colon = id.lastIndexOf(":");
  const model = colon > 0 ? id.slice(0, colon) : id;
  const method = colon > 0 ? id.slice(colon + 1) : "";
  switch (method) {
    case "generateContent":
      return generate(req, res, exchange, options, model, "whole");
    case "streamGenerateContent":
      return generate(req, res, exchange, options, model, queryOf(req, "alt") === "sse" ? "sse" : "array");
    case "countTokens":
      return countTokens(req, res, exchange, options, model);
    case "embedContent":
      return embed(req, res, exchange, options, model, false);
    case "batchEmbedContents":
      return embed(req, res, exchange, options, model, true);
    default:
      return sendGoogleError(
        res,
        exchange,
        new GatewayError("not_found", `no method ${JSON.stringify(clipClientValue(method, 64))} on models: this gateway serves generateContent, streamGenerateContent, countTokens, embedContent and batchEmbedContents`),
      );
  }
}
