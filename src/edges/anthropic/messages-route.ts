import type { CallLayer } from "../../call/call-layer.js";
import { cachePolicyFromHeader } from "../../core/cache-policy.js";
import type { Delta } from "../../core/delta.js";
import { toGatewayError } from "../../core/errors.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson } from "../../http/node-http.js";
import type { BodyLimits } from "../../http/read-body.js";
import { answerWhole, beginHttpCall, fromResult, httpCall } from "../sse/http-call.js";
import { type SseCodec, writeSse } from "../sse/write-sse.js";
import { toAnthropicError } from "./anthropic-errors.js";
import { messageFromResult } from "./anthropic-message.js";
import { anthropicParam } from "./anthropic-params.js";
import { countTokensResponse } from "./count-tokens.js";
import { anthropicRequestFrom, countTokensRequestFrom } from "./from-anthropic.js";
import { resultWithMcpBlocks } from "./mcp-blocks.js";
import { createMessageEncoder, errorEvent, PING_FRAME } from "./to-anthropic.js";

export interface MessagesOptions {
  readonly calls: CallLayer;
  readonly limits: BodyLimits & StructureLimits;
  /** Silence on a stream after which a `ping` event is sent. */
  readonly keepaliveMs: number;
  readonly sendTimeoutMs: number;
}

/** Sends `reason` as an Anthropic error; `headers` (the key's quota) go beside its own. */
export function sendAnthropicError(res: AnyResponse, exchange: Exchange, reason: unknown, headers: Readonly<Record<string, string>> = {}): void {
  exchange.code = toGatewayError(reason).code;
  const { status, headers: own, body } = toAnthropicError(reason, exchange.requestId);
  sendJson(res, status, body, { ...headers, ...own });
}

/** `x-api-key` (the header Anthropic documents) as a bearer credential, or `authorization` as it came (what @anthropic-ai/sdk 1.x sends for its apiKey). */
function credentialOf(req: AnyRequest): string | undefined {
  const apiKey = headerOf(req, "x-api-key");
  return apiKey !== undefined ? `Bearer ${apiKey}` : headerOf(req, "authorization");
}

/** The Messages API's stream: events from the encoder, `ping` as heartbeat, an `error` event (and no message_stop) on failure. */
function messagesSse(requestModel: string, requestId: string): SseCodec {
  const encoder = createMessageEncoder({ requestModel });
  return {
    events: (delta: Delta, push) => encoder.events(delta, push),
    heartbeat: PING_FRAME,
    dropped: (params) => params.map(anthropicParam),
    end: () => undefined,
    failure: (error, push) => push(errorEvent(error, requestId)),
    refuse: sendAnthropicError,
  };
}

/**
 * `POST /v1/messages`, streaming or not, for any configured alias
 * (an Anthropic client may be answered by an OpenAI or Gemini target).
 * Thinking signatures need no store here: Anthropic clients send their
 * thinking blocks back themselves.
 */
export async function messages(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: MessagesOptions): Promise<void> {
  res.setHeader("request-id", exchange.requestId);
  const begun = await beginHttpCall(req, res, exchange, { ...options, credential: credentialOf(req), refuse: sendAnthropicError }, (json) => anthropicRequestFrom(json, options.limits, { betas: headerOf(req, "anthropic-beta") }));
  if (!begun) return;
  const { parsed } = begun;
  const call = options.calls.stream(parsed.request, begun.principal, httpCall(exchange, parsed.stream ? "anthropic-sse" : "anthropic-json", begun.tags), {
    heartbeatMs: parsed.stream ? options.keepaliveMs : 0,
    cachePolicy: cachePolicyFromHeader(headerOf(req, "cache-control")),
    ...(parsed.gatewayTools ? { gatewayTools: parsed.gatewayTools } : {}),
    // Anthropic's shape carries thinking blocks, not Gemini's signatures on function calls.
    replay: "call-signatures",
  });
  if (parsed.stream) {
    return writeSse(res, exchange, call, messagesSse(parsed.request.model, exchange.requestId), {
      sendTimeoutMs: options.sendTimeoutMs,
      beforeEnd: call.keepReplay,
      droppedParams: parsed.droppedParams,
    });
  }
  return answerWhole(res, exchange, call, {
    answer: parsed.gatewayTools
      ? async (deltas) => {
          // The tools the gateway ran come before the answer's text, after its reasoning: the model read their results before it answered.
          const { result, blocks } = await resultWithMcpBlocks(deltas);
          const message = messageFromResult(result, parsed.request.model);
          const at = result.reasoningParts.length;
          return { body: { ...message, content: [...message.content.slice(0, at), ...blocks, ...message.content.slice(at)] }, dropped: [...parsed.droppedParams, ...result.droppedParams.map(anthropicParam)] };
        }
      : fromResult(
          (result) => messageFromResult(result, parsed.request.model),
          (result) => [...parsed.droppedParams, ...result.droppedParams.map(anthropicParam)],
        ),
    refuse: sendAnthropicError,
    beforeAnswer: call.keepReplay,
  });
}

/** `POST /v1/messages/count_tokens`: the prompt's tokens as the gateway counts them (exact for OpenAI's tokenizer, an estimate for others). */
export async function countTokens(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: MessagesOptions): Promise<void> {
  res.setHeader("request-id", exchange.requestId);
  const begun = await beginHttpCall(req, res, exchange, { ...options, credential: credentialOf(req), refuse: sendAnthropicError }, (json) => countTokensRequestFrom(json, options.limits));
  if (!begun) return;
  try {
    options.calls.checkAlias(begun.principal, begun.parsed.model);
    const counted = await countTokensResponse(begun.parsed);
    exchange.code = "ok";
    sendJson(res, 200, counted);
  } catch (error) {
    sendAnthropicError(res, exchange, error);
  }
}
