import type { CallLayer } from "../../call/call-layer.js";
import { cachePolicyFromHeader } from "../../core/cache-policy.js";
import { toGatewayError } from "../../core/errors.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson } from "../../http/node-http.js";
import type { BodyLimits } from "../../http/read-body.js";
import type { ResponseState } from "../../response-state/response-state.js";
import { answerWhole, beginHttpCall, httpCall, type Refuse } from "../sse/http-call.js";
import { type SseCodec, writeSse } from "../sse/write-sse.js";
import { type ConversationTurn, conversationTurn } from "./conversation-turn.js";
import { type ResponsesRequest, responsesRequestFrom } from "./from-responses.js";
import { replayForTarget } from "./replay-origins.js";
import { responsesParam, toResponsesError } from "./responses-errors.js";
import { createResponseEncoder, responseFromDeltas } from "./to-responses.js";

export interface ResponsesOptions {
  readonly calls: CallLayer;
  readonly limits: BodyLimits & StructureLimits;
  /** Silence on a stream after which a `: keepalive` comment is sent. */
  readonly keepaliveMs: number;
  readonly sendTimeoutMs: number;
  /** Stored responses (config.responses): absent, the edge is stateless and refuses `store: true` by name. */
  readonly state?: ResponseState;
}

/** Sends `reason` in OpenAI's error body, its field named as the request named it; `headers` (the key's quota) beside its own. */
function sendResponsesError(res: AnyResponse, exchange: Exchange, reason: unknown, headers: Readonly<Record<string, string>> = {}, param = responsesParam): void {
  exchange.code = toGatewayError(reason).code;
  const { status, headers: own, body } = toResponsesError(reason, param);
  sendJson(res, status, body, { ...headers, ...own });
}

/**
 * The Responses stream: the encoder's numbered events, a comment as
 * heartbeat (the API has no ping event; SSE readers skip comments), and
 * on failure `response.failed` and `error`, after which the SDK raises.
 */
function responsesSse(parsed: ResponsesRequest, turn: ConversationTurn | undefined): SseCodec & { readonly beforeEnd?: () => Promise<void> } {
  const encoder = createResponseEncoder({ requestModel: parsed.request.model, echo: parsed.echo, param: parsed.param, calls: parsed.calls });
  const codec: SseCodec = {
    events: (delta, push) => encoder.events(delta, push),
    heartbeat: ": keepalive\n\n",
    dropped: (params) => params.map(parsed.param),
    end: () => undefined,
    failure: (error, push) => encoder.failedEvents(error, push),
    refuse: (res, exchange, error, headers) => sendResponsesError(res, exchange, error, headers, parsed.param),
  };
  return turn ? turn.sse(codec, encoder.response) : codec;
}

/**
 * `POST /v1/responses`, stateless, for any configured alias. Reasoning
 * a client sends back (`encrypted_content`) is replayed only to the
 * provider and model that issued it, as each attempt's target is chosen.
 */
export async function responses(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: ResponsesOptions): Promise<void> {
  const refuse: Refuse = (r, e, error, headers) => sendResponsesError(r, e, error, headers);
  const begun = await beginHttpCall(req, res, exchange, { ...options, credential: headerOf(req, "authorization"), refuse }, (json) => responsesRequestFrom(json, options.limits));
  if (!begun) return;
  let turn: ConversationTurn | undefined;
  try {
    turn = await conversationTurn(begun.parsed, begun.principal, options.state);
  } catch (error) {
    return refuse(res, exchange, error);
  }
  const parsed = turn?.parsed ?? begun.parsed;
  const call = options.calls.stream(parsed.request, begun.principal, httpCall(exchange, parsed.stream ? "responses-sse" : "responses-json", begun.tags), {
    heartbeatMs: parsed.stream ? options.keepaliveMs : 0,
    cachePolicy: cachePolicyFromHeader(headerOf(req, "cache-control")),
    prepare: async (request, target) => replayForTarget(request, parsed.origins, { provider: target.provider.name, model: target.model }),
  });
  if (parsed.stream) {
    const codec = responsesSse(parsed, turn);
    return writeSse(res, exchange, call, codec, { sendTimeoutMs: options.sendTimeoutMs, droppedParams: parsed.droppedParams, ...(codec.beforeEnd ? { beforeEnd: codec.beforeEnd } : {}) });
  }
  return answerWhole(res, exchange, call, {
    // Folded by the stream's own encoder, not core/aggregate.ts: a whole response keeps its items in the order the deltas came.
    answer: async (deltas) => {
      const { response, droppedParams } = await responseFromDeltas(deltas, { requestModel: parsed.request.model, echo: parsed.echo, param: parsed.param, calls: parsed.calls });
      await turn?.end(response);
      return { body: response, dropped: [...parsed.droppedParams, ...droppedParams.map(parsed.param)] };
    },
    refuse: (r, e, error, headers) => sendResponsesError(r, e, error, headers, parsed.param),
  });
}
