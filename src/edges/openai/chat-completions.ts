import type { CallLayer } from "../../call/call-layer.js";
import { cachePolicyFromHeader } from "../../core/cache-policy.js";
import { GatewayError } from "../../core/errors.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf } from "../../http/node-http.js";
import type { BodyLimits } from "../../http/read-body.js";
import type { Principal } from "../../tenancy/principal.js";
import { answerWhole, beginHttpCall, fromResult, httpCall } from "../sse/http-call.js";
import { writeSse } from "../sse/write-sse.js";
import { chatRequestFromOpenAi } from "./from-openai.js";
import { openAiParam, sendOpenAiError } from "./http-errors.js";
import { openAiSse } from "./openai-sse.js";
import { completionFromResult, createChunkEncoder } from "./to-openai.js";

export interface ChatCompletionsOptions {
  readonly calls: CallLayer;
  readonly limits: BodyLimits & StructureLimits;
  /** Silence on a stream after which a `: keepalive` comment is sent. */
  readonly keepaliveMs: number;
  /** Longest a client may take no bytes before its stream is reset. */
  readonly sendTimeoutMs: number;
}

/**
 * The caller's key from `authorization: Bearer` (the OpenAI SDKs' apiKey),
 * checked before anything else: an unauthenticated body is never read.
 * Undefined when the 401 was already sent (Node discards the unread body).
 */
export async function callerOf(req: AnyRequest, res: AnyResponse, exchange: Exchange, calls: CallLayer): Promise<{ principal?: Principal } | undefined> {
  try {
    const principal = await calls.identify(headerOf(req, "authorization"), exchange.edge, exchange.fields, exchange.remote);
    return principal ? { principal } : {};
  } catch (error) {
    sendOpenAiError(res, exchange, error);
    return undefined;
  }
}

/**
 * `POST /v1/chat/completions`, streaming or not. Stored thinking signatures
 * are put back per target, as each attempt is built: they verify only with
 * the provider and model that issued them, and failover may pick another.
 */
export async function chatCompletions(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: ChatCompletionsOptions): Promise<void> {
  const begun = await beginHttpCall(req, res, exchange, { ...options, credential: headerOf(req, "authorization"), refuse: sendOpenAiError }, (json) => chatRequestFromOpenAi(json, options.limits));
  if (!begun) return;
  const { parsed } = begun;
  const call = options.calls.stream(parsed.request, begun.principal, httpCall(exchange, parsed.stream ? "openai-sse" : "openai-json", begun.tags), {
    heartbeatMs: parsed.stream ? options.keepaliveMs : 0,
    resumable: parsed.stream && parsed.resumable,
    includeUsage: parsed.includeUsage,
    replay: "reasoning-and-signatures",
    cachePolicy: cachePolicyFromHeader(headerOf(req, "cache-control")),
  });
  if (parsed.stream) {
    return writeSse(res, exchange, call, openAiSse(createChunkEncoder({ includeUsage: parsed.includeUsage, model: parsed.request.model })), {
      sendTimeoutMs: options.sendTimeoutMs,
      beforeEnd: call.keepReplay,
      droppedParams: parsed.droppedParams,
    });
  }
  return answerWhole(res, exchange, call, {
    answer: fromResult(
      (result) => completionFromResult(result, parsed.request.model),
      (result) => [...parsed.droppedParams, ...result.droppedParams.map(openAiParam)],
    ),
    refuse: sendOpenAiError,
    beforeAnswer: call.keepReplay,
  });
}

/** Last-Event-ID as the last sequence the client has; absent: -1, everything. */
function lastEventId(req: AnyRequest): number {
  const header = headerOf(req, "last-event-id");
  if (header === undefined || header === "") return -1;
  if (!/^\d{1,15}$/.test(header)) throw new GatewayError("invalid_request", "Last-Event-ID: must be a sequence number from an id: line", { field: "last_event_id" });
  return Number(header);
}

/**
 * `GET /v1/chat/completions/{id}/stream`: the rest of a resumable stream,
 * from after Last-Event-ID. Earlier deltas are shown to the encoder only,
 * so its state (the completion id, pending usage) is the original's.
 */
export async function resumeChatCompletion(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: ChatCompletionsOptions, id: string): Promise<void> {
  const caller = await callerOf(req, res, exchange, options.calls);
  if (!caller) return;
  let encoder: ReturnType<typeof createChunkEncoder> | undefined;
  let resumed: Awaited<ReturnType<CallLayer["resume"]>>;
  try {
    resumed = await options.calls.resume(id, caller.principal, exchange.signal, {
      after: lastEventId(req),
      heartbeatMs: options.keepaliveMs,
      skipped: (entry) => encoder?.encode(entry.delta),
    });
    encoder = createChunkEncoder({ includeUsage: resumed.includeUsage, ...(resumed.alias !== undefined ? { model: resumed.alias } : {}) });
  } catch (error) {
    return sendOpenAiError(res, exchange, error);
  }
  await writeSse(res, exchange, { items: resumed.items, quota: () => ({}) }, openAiSse(encoder), { sendTimeoutMs: options.sendTimeoutMs });
}
