import type { HandlerContext } from "@connectrpc/connect";
import type { Context } from "@opentelemetry/api";
import type { CallLayer } from "../../call/call-layer.js";
import { requestIdFrom } from "../../core/request-id.js";
import type { Exchange } from "../../http/exchange.js";
import type { Principal } from "../../tenancy/principal.js";
import { abortReason, toConnectError } from "./connect-errors.js";
import { EXCHANGE } from "./rpc-handler.js";

// What every RPC handler reads from connect's context to begin a call, whichever service it belongs to.

/**
 * A signal for the pipeline that aborts with a GatewayError when the
 * handler's signal aborts (client cancel, disconnect or deadline). The
 * listener is removed when the pipeline is done, so the normal end of a call
 * (connect aborts ctx.signal after every call) is never taken for a cancel.
 */
export function pipelineSignal(ctx: HandlerContext): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const onAbort = () => controller.abort(abortReason(ctx.signal.reason, ctx.timeoutMs()));
  if (ctx.signal.aborted) onAbort();
  else ctx.signal.addEventListener("abort", onAbort, { once: true });
  return { signal: controller.signal, release: () => ctx.signal.removeEventListener("abort", onAbort) };
}

/**
 * What the pipeline needs from the request's exchange: its id, its trace
 * and its access-line fields. Handlers reached without our adapter
 * (in-memory transports) get a request id of their own and no trace.
 */
export function exchangeOf(ctx: HandlerContext): { requestId: string; trace?: Context; fields?: Record<string, unknown>; remote?: string; arrivedAt?: number } {
  const exchange: Exchange | undefined = ctx.values.get(EXCHANGE);
  if (!exchange) return { requestId: requestIdFrom(ctx.requestHeader.get("x-request-id")) };
  return { requestId: exchange.requestId, trace: exchange.trace(), fields: exchange.fields, arrivedAt: exchange.startedAt, ...(exchange.remote ? { remote: exchange.remote } : {}) };
}

/** The key's quota as response metadata: set before the first message, or before the error status. */
export function setQuota(ctx: HandlerContext, quota: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(quota)) ctx.responseHeader.set(name, value);
}

/** The client's deadline on the pipeline's clock: the budget for every attempt. */
export function deadlineOf(ctx: HandlerContext): { deadlineAt?: number } {
  const remaining = ctx.timeoutMs();
  return remaining === undefined ? {} : { deadlineAt: performance.now() + remaining };
}

/** The caller's key from its `authorization` metadata, named on the access line; refusals as ConnectErrors. */
export async function callerOf(calls: Pick<CallLayer, "identify">, ctx: HandlerContext): Promise<Principal | undefined> {
  try {
    const exchange: Exchange | undefined = ctx.values.get(EXCHANGE);
    return await calls.identify(ctx.requestHeader.get("authorization") ?? undefined, exchange?.edge ?? "grpc", exchange?.fields, exchange?.remote);
  } catch (error) {
    throw toConnectError(error);
  }
}
