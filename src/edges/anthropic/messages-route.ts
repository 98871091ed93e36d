import { type CallLayer, plainDeltas } from "../../call/call-layer.js";
import { aggregateDeltas } from "../../core/aggregate.js";
import type { Delta } from "../../core/delta.js";
import { toGatewayError } from "../../core/errors.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson } from "../../http/node-http.js";
import type { BodyLimits } from "../../http/read-body.js";
import { readJsonBody } from "../../http/read-json.js";
import type { Principal } from "../../tenancy/principal.js";
import { httpCall } from "../sse/http-call.js";
import { DROPPED_PARAMS_HEADER, type SseCodec, writeSse } from "../sse/write-sse.js";
import { toAnthropicError } from "./anthropic-errors.js";
import { messageFromResult } from "./anthropic-message.js";
import { anthropicParam } from "./anthropic-params.js";
import { countTokensResponse } from "./count-tokens.js";
import { anthropicRequestFrom, countTokensRequestFrom } from "./from-anthropic.js";
import { createMessageEncoder, errorEvent, PING_FRAME } from "./to-anthropic.js";

export interface MessagesOptions {
  readonly calls: CallLayer;
  readonly limits: BodyLimits & StructureLimits;
  /** Silence on a stream after which a `ping` event is sent. */
  readonly keepaliveMs: number;
  readonly sendTimeoutMs: number;
}

/** Sends `reason` as an Anthropic error; `headers` (the key's quota) go beside its own. */
function sendAnthropicError(res: AnyResponse, exchange: Exchange, reason: unknown, headers: Readonly<Record<string, string>> = {}): void {
  exchange.code = toGatewayError(reason).code;
  const { status, headers: own, body } = toAnthropicError(reason, exchange.requestId);
  sendJson(res, status, body, { ...headers, ...own });
}

/**
 * The caller's key: `x-api-key` (the header Anthropic documents) or
 * `authorization: Bearer` (what @anthropic-ai/sdk 1.x sends for its
 * apiKey), checked before the body is read. Undefined when the 401 was
 * already sent.
 */
async function callerOf(req: AnyRequest, res: AnyResponse, exchange: Exchange, calls: CallLayer): Promise<{ principal?: Principal } | undefined> {
  const apiKey = headerOf(req, "x-api-key");
  const credential = apiKey !== undefined ? `Bearer ${apiKey}` : headerOf(req, "authorization");
  try {
    const principal = await calls.identify(credential, exchange.edge, exchange.fields);
    return principal ? { principal } : {};
  } catch (error) {
    sendAnthropicError(res, exchange, error);
    return undefined;
  }
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
  const caller = await callerOf(req, res, exchange, options.calls);
  if (!caller) return;
  let parsed: ReturnType<typeof anthropicRequestFrom>;
  try {
    parsed = anthropicRequestFrom(await readJsonBody(req, options.limits), options.limits);
  } catch (error) {
    return sendAnthropicError(res, exchange, error);
  }
  const call = options.calls.stream(parsed.request, caller.principal, httpCall(exchange, parsed.stream ? "anthropic-sse" : "anthropic-json"), {
    heartbeatMs: parsed.stream ? options.keepaliveMs : 0,
  });
  if (parsed.stream) return writeSse(res, exchange, call, messagesSse(parsed.request.model, exchange.requestId), { sendTimeoutMs: options.sendTimeoutMs });
  try {
    const result = await aggregateDeltas(plainDeltas(call.items));
    const message = messageFromResult(result, parsed.request.model);
    exchange.code = "ok";
    const dropped = result.droppedParams.map(anthropicParam).join(",");
    sendJson(res, 200, message, { ...call.quota(), ...(dropped ? { [DROPPED_PARAMS_HEADER]: dropped } : {}) });
  } catch (error) {
    if (!exchange.signal.aborted) sendAnthropicError(res, exchange, error, call.quota());
  }
}

/** `POST /v1/messages/count_tokens`: the prompt's tokens as the gateway counts them (exact for OpenAI's tokenizer, an estimate for others). */
export async function countTokens(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: MessagesOptions): Promise<void> {
  res.setHeader("request-id", exchange.requestId);
  const caller = await callerOf(req, res, exchange, options.calls);
  if (!caller) return;
  try {
    const request = countTokensRequestFrom(await readJsonBody(req, options.limits), options.limits);
    options.calls.checkAlias(caller.principal, request.model);
    const counted = await countTokensResponse(request);
    exchange.code = "ok";
    sendJson(res, 200, counted);
  } catch (error) {
    sendAnthropicError(res, exchange, error);
  }
}
