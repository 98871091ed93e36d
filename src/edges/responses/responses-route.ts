import type { CallLayer } from "../../call/call-layer.js";
import { cachePolicyFromHeader } from "../../core/cache-policy.js";
import { toGatewayError } from "../../core/errors.js";
import { replayForTarget } from "../../core/replay-origins.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson } from "../../http/node-http.js";
import type { BodyLimits } from "../../http/read-body.js";
import type { ResponseState } from "../../response-state/response-state.js";
import { answerWhole, beginHttpCall, httpCall, type Refuse } from "../sse/http-call.js";
import { type SseCodec, writeSse } from "../sse/write-sse.js";
import { serveBackground } from "./background-routes.js";
import type { BackgroundRuns } from "./background-runs.js";
import { conversationIdOf } from "./conversation-request.js";
import { type ConversationTurn, conversationTurn } from "./conversation-turn.js";
import { type ResponsesRequest, responsesRequestFrom } from "./from-responses.js";
import { keepResponse } from "./keep-response.js";
import type { ResponseObject } from "./response-object.js";
import { responsesParam, toResponsesError } from "./responses-errors.js";
import { loadStoredContext } from "./stored-input.js";
import { createResponseEncoder, responseFromDeltas } from "./to-responses.js";

export interface ResponsesOptions {
  readonly calls: CallLayer;
  readonly limits: BodyLimits & StructureLimits;
  /** Silence on a stream after which a `: keepalive` comment is sent. */
  readonly keepaliveMs: number;
  readonly sendTimeoutMs: number;
  /** Stored responses (config.responses): absent, the edge is stateless and refuses `store: true` by name. */
  readonly state?: ResponseState;
  /** Background runs (`background: true`): absent with `state`. */
  readonly runs?: BackgroundRuns;
}

/** Sends `reason` in OpenAI's error body, its field named as the request named it; `headers` (the key's quota) beside its own. */
export function sendResponsesError(res: AnyResponse, exchange: Exchange, reason: unknown, headers: Readonly<Record<string, string>> = {}, param = responsesParam): void {
  exchange.code = toGatewayError(reason).code;
  const { status, headers: own, body } = toResponsesError(reason, param);
  sendJson(res, status, body, { ...headers, ...own });
}

/** Keeps the response that ended (keep-response.ts); absent when nothing is to be kept. */
type Keep = (response: ResponseObject) => Promise<unknown>;

/**
 * The Responses stream: the encoder's numbered events, a comment as
 * heartbeat (the API has no ping event; SSE readers skip comments), and
 * on failure `response.failed` and `error`, after which the SDK raises.
 * With `keep`, the frames of `finish` (the terminal event among them) are
 * held until the response is kept (`beforeEnd`), so a client that sends
 * its next turn on seeing them finds this one stored.
 */
function responsesSse(parsed: ResponsesRequest, keep: Keep | undefined): SseCodec & { readonly beforeEnd: () => Promise<void>; readonly response: () => ResponseObject } {
  const encoder = createResponseEncoder({ requestModel: parsed.request.model, echo: parsed.echo, param: parsed.param, calls: parsed.calls });
  const held: string[] = [];
  return {
    events: (delta, push) => encoder.events(delta, keep && delta.type === "finish" ? (frame) => held.push(frame) : push),
    heartbeat: ": keepalive\n\n",
    dropped: (params) => params.map(parsed.param),
    end: (push) => {
      for (const frame of held.splice(0)) push(frame);
    },
    failure: (error, push) => {
      encoder.failedEvents(error, push);
      // Not awaited: the failure is already the client's to read; a failed response is kept for GET, not continued.
      if (keep) void keep(encoder.response());
    },
    refuse: (res, exchange, error, headers) => sendResponsesError(res, exchange, error, headers, parsed.param),
    beforeEnd: async () => {
      if (keep) await keep(encoder.response());
    },
    response: () => encoder.response(),
  };
}

/**
 * The stream of a response in a conversation: the conversation's codec
 * holds the terminal event until the turn is appended (conversation-turn.ts),
 * and the response is kept first where responses are stored.
 */
function conversationSse(parsed: ResponsesRequest, turn: ConversationTurn, keep: Keep | undefined): SseCodec & { readonly beforeEnd: () => Promise<void> } {
  const base = responsesSse(parsed, undefined);
  const codec = turn.sse(base, base.response);
  return {
    ...codec,
    beforeEnd: async () => {
      if (keep) await keep(base.response());
      await codec.beforeEnd();
    },
  };
}

/**
 * `POST /v1/responses` for any configured alias. Reasoning a client sends
 * back (`encrypted_content`) is replayed only to the provider and model
 * that issued it, as each attempt's target is chosen. Where the gateway
 * keeps responses, `previous_response_id` and `item_reference` are loaded
 * first (stored-input.ts) and a response with `store` is kept when it
 * ends (keep-response.ts).
 */
export async function responses(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: ResponsesOptions): Promise<void> {
  const refuse: Refuse = (r, e, error, headers) => sendResponsesError(r, e, error, headers);
  const { state } = options;
  const begun = await beginHttpCall(req, res, exchange, { ...options, credential: headerOf(req, "authorization"), refuse }, (json) => json);
  if (!begun) return;
  const owner = begun.principal?.id ?? "";
  let parsed: ResponsesRequest;
  let turn: ConversationTurn | undefined;
  try {
    // Checked before the stored chain is read: with previous_response_id, conversation is the API's 400, not a 404.
    if (begun.parsed !== null && typeof begun.parsed === "object" && !Array.isArray(begun.parsed)) conversationIdOf(begun.parsed as Record<string, unknown>);
    const { body, stored } = await loadStoredContext(begun.parsed, owner, state);
    parsed = responsesRequestFrom(body, options.limits, stored);
    turn = await conversationTurn(parsed, begun.principal, state);
    if (turn) parsed = turn.parsed;
  } catch (error) {
    refuse(res, exchange, error);
    return;
  }
  if (parsed.background) return serveBackground(res, exchange, options, { ...begun, parsed }, parsed.input, cachePolicyFromHeader(headerOf(req, "cache-control")));
  const keep: Keep | undefined = state && parsed.store ? (response) => keepResponse(state, response, { owner, input: parsed.input, ...(parsed.previousId ? { previousId: parsed.previousId } : {}) }, exchange.requestId) : undefined;
  const call = options.calls.stream(parsed.request, begun.principal, httpCall(exchange, parsed.stream ? "responses-sse" : "responses-json", begun.tags), {
    heartbeatMs: parsed.stream ? options.keepaliveMs : 0,
    cachePolicy: cachePolicyFromHeader(headerOf(req, "cache-control")),
    ...(parsed.gatewayTools ? { gatewayTools: parsed.gatewayTools } : {}),
    prepare: async (request, target) => replayForTarget(request, parsed.origins, { provider: target.provider.name, model: target.model }, parsed.request.messages),
  });
  if (parsed.stream) {
    const codec = turn ? conversationSse(parsed, turn, keep) : responsesSse(parsed, keep);
    return writeSse(res, exchange, call, codec, { sendTimeoutMs: options.sendTimeoutMs, droppedParams: parsed.droppedParams, beforeEnd: codec.beforeEnd });
  }
  return answerWhole(res, exchange, call, {
    // Folded by the stream's own encoder, not core/aggregate.ts: a whole response keeps its items in the order the deltas came.
    answer: async (deltas) => {
      const { response, droppedParams } = await responseFromDeltas(deltas, { requestModel: parsed.request.model, echo: parsed.echo, param: parsed.param, calls: parsed.calls });
      if (keep) await keep(response);
      await turn?.end(response);
      return { body: response, dropped: [...parsed.droppedParams, ...droppedParams.map(parsed.param)] };
    },
    refuse: (r, e, error, headers) => sendResponsesError(r, e, error, headers, parsed.param),
  });
}
