import { type CallLayer, plainDeltas } from "../../call/call-layer.js";
import { toGatewayError } from "../../core/errors.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson } from "../../http/node-http.js";
import type { BodyLimits } from "../../http/read-body.js";
import { readJsonBody } from "../../http/read-json.js";
import type { Principal } from "../../tenancy/principal.js";
import { httpCall } from "../sse/http-call.js";
import { DROPPED_PARAMS_HEADER, type SseCodec, writeSse } from "../sse/write-sse.js";
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
}

/** Sends `reason` in OpenAI's error body, its field named as the request named it; `headers` (the key's quota) beside its own. */
function sendResponsesError(res: AnyResponse, exchange: Exchange, reason: unknown, headers: Readonly<Record<string, string>> = {}, param = responsesParam): void {
  exchange.code = toGatewayError(reason).code;
  const { status, headers: own, body } = toResponsesError(reason, param);
  sendJson(res, status, body, { ...headers, ...own });
}

/** The caller's key from `authorization: Bearer` (the openai SDK's apiKey), before the body is read; undefined when the 401 was sent. */
async function callerOf(req: AnyRequest, res: AnyResponse, exchange: Exchange, calls: CallLayer): Promise<{ principal?: Principal } | undefined> {
  try {
    const principal = await calls.identify(headerOf(req, "authorization"), exchange.edge, exchange.fields);
    return principal ? { principal } : {};
  } catch (error) {
    sendResponsesError(res, exchange, error);
    return undefined;
  }
}

/**
 * The Responses stream: the encoder's numbered events, a comment as
 * heartbeat (the API has no ping event; SSE readers skip comments), and
 * on failure `response.failed` and `error`, after which the SDK raises.
 */
function responsesSse(parsed: ResponsesRequest): SseCodec {
  const encoder = createResponseEncoder({ requestModel: parsed.request.model, echo: parsed.echo, param: parsed.param });
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
  const caller = await callerOf(req, res, exchange, options.calls);
  if (!caller) return;
  let parsed: ResponsesRequest;
  try {
    parsed = responsesRequestFrom(await readJsonBody(req, options.limits), options.limits);
  } catch (error) {
    return sendResponsesError(res, exchange, error);
  }
  const call = options.calls.stream(parsed.request, caller.principal, httpCall(exchange, parsed.stream ? "responses-sse" : "responses-json"), {
    heartbeatMs: parsed.stream ? options.keepaliveMs : 0,
    prepare: async (request, target) => replayForTarget(request, parsed.origins, { provider: target.provider.name, model: target.model }),
  });
  if (parsed.stream) return writeSse(res, exchange, call, responsesSse(parsed), { sendTimeoutMs: options.sendTimeoutMs });
  try {
    const { response, droppedParams } = await responseFromDeltas(plainDeltas(call.items), { requestModel: parsed.request.model, echo: parsed.echo, param: parsed.param });
    exchange.code = "ok";
    const dropped = droppedParams.map(parsed.param).join(",");
    sendJson(res, 200, response, { ...call.quota(), ...(dropped ? { [DROPPED_PARAMS_HEADER]: dropped } : {}) });
  } catch (error) {
    if (!exchange.signal.aborted) sendResponsesError(res, exchange, error, call.quota(), parsed.param);
  }
}
