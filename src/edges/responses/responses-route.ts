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
import { serveBackground } from "./background-routes.js";
import type { BackgroundRuns } from "./background-runs.js";
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
  /** Background runs (`background: true`): absent with `state`. */
  readonly runs?: BackgroundRuns;
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
function responsesSse(parsed: ResponsesRequest): SseCodec {
  const encoder = createResponseEncoder({ requestModel: parsed.request.model, echo: parsed.echo, param: parsed.param, calls: parsed.calls });
  return {
    events: (delta, push) => encoder.events(delta, push),
    heartbeat: ": keepalive\n\n",
    dropped: (params) => params.map(parsed.param),
    end: () => undefined,
    failure: (error, push) => encoder.failedEvents(error, push),
    refuse: (res, exchange, error, headers) => sendResponsesError(res, exchange, error, headers, parsed.param),
  };
}

/**
 * `POST /v1/responses`, stateless, for any configured alias. Reasoning
 * a client sends back (`encrypted_content`) is replayed only to the
 * provider and model that issued it, as each attempt's target is chosen.
 */
export async function responses(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: ResponsesOptions): Promise<void> {
  const refuse: Refuse = (r, e, error, headers) => sendResponsesError(r, e, error, headers);
  let input: unknown;
  const begun = await beginHttpCall(req, res, exchange, { ...options, credential: headerOf(req, "authorization"), refuse }, (json) => {
    input = (json as { input?: unknown } | null)?.input;
    return responsesRequestFrom(json, options.limits);
  });
  if (!begun) return;
  const { parsed } = begun;
  if (parsed.background) return serveBackground(res, exchange, options, begun, input, cachePolicyFromHeader(headerOf(req, "cache-control")));
  const call = options.calls.stream(parsed.request, begun.principal, httpCall(exchange, parsed.stream ? "responses-sse" : "responses-json", begun.tags), {
    heartbeatMs: parsed.stream ? options.keepaliveMs : 0,
    cachePolicy: cachePolicyFromHeader(headerOf(req, "cache-control")),
    prepare: async (request, target) => replayForTarget(request, parsed.origins, { provider: target.provider.name, model: target.model }),
  });
  if (parsed.stream) return writeSse(res, exchange, call, responsesSse(parsed), { sendTimeoutMs: options.sendTimeoutMs, droppedParams: parsed.droppedParams });
  return answerWhole(res, exchange, call, {
    // Folded by the stream's own encoder, not core/aggregate.ts: a whole response keeps its items in the order the deltas came.
    answer: async (deltas) => {
      const { response, droppedParams } = await responseFromDeltas(deltas, { requestModel: parsed.request.model, echo: parsed.echo, param: parsed.param, calls: parsed.calls });
      return { body: response, dropped: [...parsed.droppedParams, ...droppedParams.map(parsed.param)] };
    },
    refuse: (r, e, error, headers) => sendResponsesError(r, e, error, headers, parsed.param),
  });
}
