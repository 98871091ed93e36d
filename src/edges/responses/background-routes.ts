import type { CallLayer } from "../../call/call-layer.js";
import type { CachePolicy } from "../../core/cache-policy.js";
import { GatewayError, toGatewayError } from "../../core/errors.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson } from "../../http/node-http.js";
import type { JsonObject } from "../../response-state/response-ids.js";
import type { ResponseState } from "../../response-state/response-state.js";
import type { StoredResponse } from "../../response-state/stored-response.js";
import type { Principal } from "../../tenancy/principal.js";
import { httpCall } from "../sse/http-call.js";
import { type SseCodec, writeSse } from "../sse/write-sse.js";
import { isTerminalStatus, replayEncoderOptions } from "./background-record.js";
import type { BackgroundRuns } from "./background-runs.js";
import type { ResponsesRequest } from "./from-responses.js";
import { invalidField } from "./invalid-field.js";
import { toResponsesError } from "./responses-errors.js";
import { responseNotFound } from "./stored-input.js";
import { createResponseEncoder } from "./to-responses.js";

/** What the background endpoints need: the call layer (keys, resume), the runs, and the edge's stream settings. */
export interface BackgroundEdge {
  readonly calls: CallLayer;
  readonly keepaliveMs: number;
  readonly sendTimeoutMs: number;
  readonly state?: ResponseState;
  readonly runs?: BackgroundRuns;
}

function sendError(res: AnyResponse, exchange: Exchange, reason: unknown): void {
  exchange.code = toGatewayError(reason).code;
  const { status, headers, body } = toResponsesError(reason);
  sendJson(res, status, body, headers);
}

/** The API's 404 for an id that is unknown, expired, deleted or another key's: one answer for all four. */

async function callerOf(req: AnyRequest, res: AnyResponse, exchange: Exchange, calls: CallLayer): Promise<{ principal?: Principal } | undefined> {
  try {
    const principal = await calls.identify(headerOf(req, "authorization"), exchange.edge, exchange.fields, exchange.remote);
    return principal ? { principal } : {};
  } catch (error) {
    sendError(res, exchange, error);
    return undefined;
  }
}

/** `starting_after` of `GET /v1/responses/{id}?stream=true`: the last event's `sequence_number` the client has (-1: none). */
function startingAfter(query: URLSearchParams): number {
  const value = query.get("starting_after");
  if (value === null || value === "") return -1;
  if (!/^\d{1,15}$/.test(value)) invalidField("starting_after", "must be an event's sequence_number");
  return Number(value);
}

/**
 * A run's events, re-encoded from its stored deltas by an encoder set up
 * as the original was: event `n` is the original's event `n`, so those up
 * to `after` are made and not sent.
 */
function replaySse(response: JsonObject, after: number): SseCodec {
  const encoder = createResponseEncoder(replayEncoderOptions(response));
  let sequence = 0;
  const counted = (push: (part: string) => void) => (frame: string) => {
    if (sequence++ > after) push(frame);
  };
  return {
    events: (delta, push) => encoder.events(delta, counted(push)),
    heartbeat: ": keepalive\n\n",
    dropped: (params) => params,
    end: () => undefined,
    failure: (error, push) => encoder.failedEvents(error, counted(push)),
    refuse: (res, exchange, error) => sendError(res, exchange, error),
  };
}

/** Why a finished run has no events to stream: it failed before its first one, or they are past their retention. */
function withoutEvents(record: StoredResponse): GatewayError {
  const error = record.response.error as { readonly message?: unknown } | null | undefined;
  if (record.status === "failed" && typeof error?.message === "string") return new GatewayError("internal", `response ${record.id} failed before its first event: ${error.message}`);
  return new GatewayError("not_found", `the events of response ${record.id} are no longer kept (it is ${record.status}): GET it without stream=true`, { field: "response_id" });
}

/**
 * Streams the events of background response `record` after `after`, then
 * the live ones: from the resumable stream its run writes under its id,
 * waiting while the run has not opened it yet (queued behind the key's
 * stream slot, or its first attempt).
 */
async function streamEvents(res: AnyResponse, exchange: Exchange, edge: BackgroundEdge & { readonly runs: BackgroundRuns }, record: StoredResponse, principal: Principal | undefined, after: number): Promise<void> {
  const { id } = record;
  let resumed: Awaited<ReturnType<CallLayer["resume"]>>;
  for (let current = record; ; ) {
    try {
      resumed = await edge.calls.resume(id, principal, exchange.signal, { after: -1, heartbeatMs: edge.keepaliveMs });
      break;
    } catch (error) {
      if (toGatewayError(error).code !== "not_found" || exchange.signal.aborted) return sendError(res, exchange, error);
      if (isTerminalStatus(current.status)) return sendError(res, exchange, withoutEvents(current));
      await edge.runs.opened(id, exchange.signal);
      const again = await edge.runs.get(id, principal);
      if (!again) return sendError(res, exchange, responseNotFound(id));
      current = again;
    }
  }
  await writeSse(res, exchange, { items: resumed.items, quota: () => ({}) }, replaySse(record.response, after), { sendTimeoutMs: edge.sendTimeoutMs });
}

/**
 * `POST /v1/responses` with `background: true`: kept queued and run on the
 * gateway once the key is admitted; answered with the queued response, or
 * with `stream: true` its events as they come (the client leaving stops
 * only its reading).
 */
export async function serveBackground(
  res: AnyResponse,
  exchange: Exchange,
  edge: BackgroundEdge,
  begun: { readonly parsed: ResponsesRequest; readonly principal?: Principal; readonly tags: Readonly<Record<string, string>> },
  input: unknown,
  cachePolicy: CachePolicy | undefined,
): Promise<void> {
  const { runs } = edge;
  if (!runs)
    return sendError(
      res,
      exchange,
      new GatewayError("invalid_request", "background: this gateway keeps no responses (responses.store is false), which background mode needs: stream the response instead (stream: true)", { field: "background" }),
    );
  const { signal: _, ...call } = httpCall(exchange, begun.parsed.stream ? "responses-background-sse" : "responses-background", begun.tags);
  let queued: JsonObject;
  try {
    queued = await runs.start({ parsed: begun.parsed, input, ...(begun.principal ? { principal: begun.principal } : {}), call, ...(cachePolicy ? { cachePolicy } : {}) });
  } catch (error) {
    return sendError(res, exchange, error);
  }
  if (!begun.parsed.stream) {
    exchange.code = "ok";
    return sendJson(res, 200, queued);
  }
  const record = await runs.get(String(queued.id), begun.principal);
  if (!record) return sendError(res, exchange, responseNotFound(String(queued.id)));
  return streamEvents(res, exchange, { ...edge, runs }, record, begun.principal, -1);
}

/** `GET /v1/responses/{id}`: the stored response as it stands; with `stream=true` a background run's events after `starting_after`. */
export async function retrieveResponse(req: AnyRequest, res: AnyResponse, exchange: Exchange, edge: BackgroundEdge, id: string): Promise<void> {
  const caller = await callerOf(req, res, exchange, edge.calls);
  if (!caller) return;
  try {
    const query = new URL(req.url ?? "/", "http://x").searchParams;
    const stream = query.get("stream") === "true";
    const after = stream ? startingAfter(query) : -1;
    const record = edge.runs ? await edge.runs.get(id, caller.principal) : await edge.state?.store.get(id, caller.principal?.id ?? "");
    if (!record) throw responseNotFound(id);
    if (!stream) {
      exchange.code = "ok";
      return sendJson(res, 200, record.response);
    }
    if (!edge.runs || record.response.background !== true) invalidField("stream", "only a background response's events are kept: GET it without stream=true");
    return await streamEvents(res, exchange, { ...edge, runs: edge.runs }, record, caller.principal, after);
  } catch (error) {
    return sendError(res, exchange, error);
  }
}

/** `POST /v1/responses/{id}/cancel`: stops a background run wherever it runs; the response as it ended. */
export async function cancelResponse(req: AnyRequest, res: AnyResponse, exchange: Exchange, edge: BackgroundEdge, id: string): Promise<void> {
  const caller = await callerOf(req, res, exchange, edge.calls);
  if (!caller) return;
  try {
    if (!edge.runs) throw responseNotFound(id);
    const record = await edge.runs.cancel(id, caller.principal);
    if (!record) throw responseNotFound(id);
    exchange.code = "ok";
    sendJson(res, 200, record.response);
  } catch (error) {
    sendError(res, exchange, error);
  }
}
