import { type CallContext, type CallLayer, type CallStream, DROPPED_PARAMS_HEADER } from "../../call/call-layer.js";
import { refusalOverhead } from "../../call/overhead.js";
import { aggregateDeltas, type ChatResult } from "../../core/aggregate.js";
import type { Delta } from "../../core/delta.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, headerOf, sendJson } from "../../http/node-http.js";
import type { BodyLimits } from "../../http/read-body.js";
import { readJsonBody } from "../../http/read-json.js";
import type { Principal } from "../../tenancy/principal.js";
import { parseTagsHeader, TAGS_HEADER } from "../../tenancy/tags.js";

/** An HTTP exchange as the call layer's context: its id, its signal, its trace and access-line fields, and its `sluice-tags` (parsed by beginHttpCall). */
export function httpCall(exchange: Exchange, edge: string, tags?: Readonly<Record<string, string>>): CallContext {
  return {
    requestId: exchange.requestId,
    edge,
    signal: exchange.signal,
    trace: exchange.trace(),
    fields: exchange.fields,
    arrivedAt: exchange.startedAt,
    ...(tags ? { tags } : {}),
    ...(exchange.remote ? { remote: exchange.remote } : {}),
  };
}

/** Sends a failure in the edge's own error body; `headers` are the key's quota, when it has any. */
export type Refuse = (res: AnyResponse, exchange: Exchange, error: unknown, headers?: Readonly<Record<string, string>>) => void;

/**
 * The start every HTTP edge shares: the caller's key first (an
 * unauthenticated body is never read; Node discards it after the 401),
 * then the body within its limits, decoded by the edge. Undefined when
 * the refusal was already sent.
 */
export async function beginHttpCall<P>(
  req: AnyRequest,
  res: AnyResponse,
  exchange: Exchange,
  options: { readonly calls: CallLayer; readonly limits: BodyLimits & StructureLimits; readonly credential: string | undefined; readonly refuse: Refuse },
  decode: (json: unknown) => P,
): Promise<{ readonly principal?: Principal; readonly parsed: P; readonly tags: Readonly<Record<string, string>> } | undefined> {
  let principal: Principal | undefined;
  try {
    principal = await options.calls.identify(options.credential, exchange.edge, exchange.fields, exchange.remote);
  } catch (error) {
    options.refuse(res, exchange, error, refusalOverhead(exchange.startedAt));
    return undefined;
  }
  try {
    const tags = parseTagsHeader(headerOf(req, TAGS_HEADER));
    const parsed = decode(await readJsonBody(req, options.limits));
    return principal ? { principal, parsed, tags } : { parsed, tags };
  } catch (error) {
    options.refuse(res, exchange, error, refusalOverhead(exchange.startedAt));
    return undefined;
  }
}

/** A whole answer's body and the parameters dropped for it (the edge's names). */
export interface WholeAnswer {
  readonly body: unknown;
  readonly dropped: readonly string[];
}

/** The usual way to a whole answer: the deltas folded into one result (core/aggregate.ts), then encoded. */
export function fromResult(encode: (result: ChatResult) => unknown, dropped: (result: ChatResult) => readonly string[]): (deltas: AsyncIterable<Delta>) => Promise<WholeAnswer> {
  return async (deltas) => {
    const result = await aggregateDeltas(deltas);
    return { body: encode(result), dropped: dropped(result) };
  };
}

/**
 * A whole answer as one JSON response: the call's deltas turned into the
 * edge's body, with the key's quota and the dropped parameters as headers.
 */
export async function answerWhole(
  res: AnyResponse,
  exchange: Exchange,
  call: CallStream,
  edge: { readonly answer: (deltas: AsyncIterable<Delta>) => Promise<WholeAnswer>; readonly refuse: Refuse; readonly beforeAnswer?: () => Promise<void> },
): Promise<void> {
  try {
    const { body, dropped } = await edge.answer(call.whole());
    await edge.beforeAnswer?.();
    exchange.code = "ok";
    const names = [...new Set(dropped)].join(",");
    sendJson(res, 200, body, { ...call.quota(), ...(names ? { [DROPPED_PARAMS_HEADER]: names } : {}) });
  } catch (error) {
    if (!exchange.signal.aborted) edge.refuse(res, exchange, error, call.quota());
  }
}
