import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { aggregateDeltas } from "../../core/aggregate.js";
import { GatewayError } from "../../core/errors.js";
import { withHeartbeats } from "../../core/heartbeats.js";
import { joinBuffered } from "../../core/join-deltas.js";
import { requestIdFrom } from "../../core/request-id.js";
import type { Context } from "@opentelemetry/api";
import type { Exchange } from "../../http/exchange.js";
import type { ChatPipeline } from "../../pipeline/chat-pipeline.js";
import { EXCHANGE } from "../../server/rpc-handler.js";
import type { Quota } from "../../store/tenant-store.js";
import { mayUse, type Principal } from "../../tenancy/principal.js";
import { quotaHeaders } from "../../tenancy/quota-headers.js";
import type { Tenancy } from "../../tenancy/tenancy.js";
import { ChatService, ListModelsResponseSchema, ModelSchema } from "../../../gen/sluice/v1/chat_service_pb.js";
import { abortReason, toConnectError } from "./connect-errors.js";
import { chatRequestFromProto, type ProtoChatRequest } from "./from-proto.js";
import { deltaToProto, resultToProto } from "./to-proto.js";

export interface ChatServiceOptions {
  readonly pipeline: ChatPipeline;
  /** Nesting allowed in tool schemas (limits.maxJsonDepth). */
  readonly maxJsonDepth: number;
  /** Who a request is (its `authorization` metadata); every request is anonymous without it. */
  readonly tenancy?: Pick<Tenancy, "identify">;
}

/**
 * A signal for the pipeline that aborts with a GatewayError when the
 * handler's signal aborts (client cancel, disconnect or deadline). The
 * listener is removed when the pipeline is done, so the normal end of a call
 * (connect aborts ctx.signal after every call) is never taken for a cancel.
 */
function pipelineSignal(ctx: HandlerContext): { signal: AbortSignal; release(): void } {
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
function exchangeOf(ctx: HandlerContext): { requestId: string; trace?: Context; fields?: Record<string, unknown> } {
  const exchange: Exchange | undefined = ctx.values.get(EXCHANGE);
  if (!exchange) return { requestId: requestIdFrom(ctx.requestHeader.get("x-request-id")) };
  return { requestId: exchange.requestId, trace: exchange.trace(), fields: exchange.fields };
}

/**
 * The request's key, resolved once from its `authorization` metadata; its
 * name goes on the access line. Throws UNAUTHENTICATED.
 */
async function principalOf(ctx: HandlerContext, tenancy: Pick<Tenancy, "identify"> | undefined): Promise<Principal | undefined> {
  const exchange: Exchange | undefined = ctx.values.get(EXCHANGE);
  const principal = await tenancy?.identify(ctx.requestHeader.get("authorization") ?? undefined, exchange?.edge ?? "grpc");
  if (principal && exchange) exchange.fields.key = principal.name;
  return principal;
}

/** What is left of the key's limits, as response metadata: set before the first message, or before the error status. */
function quotaMetadata(ctx: HandlerContext): (quota: Quota) => void {
  return (quota) => {
    for (const [name, value] of Object.entries(quotaHeaders(quota))) ctx.responseHeader.set(name, value);
  };
}

/** Response header (gRPC metadata) naming the parameters an alias dropped; the stream's `start` carries the same list. */
export const DROPPED_PARAMS_HEADER = "sluice-dropped-params";

/** The client's deadline on the pipeline's clock: the budget for every attempt. */
function deadlineOf(ctx: HandlerContext): { deadlineAt?: number } {
  const remaining = ctx.timeoutMs();
  return remaining === undefined ? {} : { deadlineAt: performance.now() + remaining };
}

function heartbeatInterval(ms: number | undefined): number {
  if (!ms) return 0;
  if (ms < 10 || ms > 300_000) {
    throw toConnectError(
      new GatewayError("invalid_request", "stream_options.heartbeat_interval_ms: must be 0 or between 10 and 300000", {
        field: "stream_options.heartbeat_interval_ms",
      }),
    );
  }
  return ms;
}

/** sluice.v1.ChatService over gRPC, gRPC-Web and Connect. */
export function createChatService(options: ChatServiceOptions): ServiceImpl<typeof ChatService> {
  const { pipeline } = options;
  const begin = (req: ProtoChatRequest, ctx: HandlerContext) => {
    try {
      return { ...exchangeOf(ctx), request: chatRequestFromProto(req, options.maxJsonDepth) };
    } catch (error) {
      throw toConnectError(error);
    }
  };
  const identify = async (ctx: HandlerContext) => {
    try {
      return await principalOf(ctx, options.tenancy);
    } catch (error) {
      throw toConnectError(error);
    }
  };
  return {
    async *streamChat(req, ctx) {
      const principal = await identify(ctx);
      const { request, ...context } = begin(req, ctx);
      const interval = heartbeatInterval(req.streamOptions?.heartbeatIntervalMs);
      const link = pipelineSignal(ctx);
      let sequence = 0n;
      try {
        const deltas = pipeline.stream(request, {
          ...context,
          signal: link.signal,
          edge: "grpc",
          ...deadlineOf(ctx),
          ...(principal ? { principal, onQuota: quotaMetadata(ctx) } : {}),
        });
        const source = interval > 0 ? withHeartbeats(deltas, interval) : deltas;
        const next = () => source.next();
        try {
          for (let pulled = await next(); pulled.done !== true; ) {
            // Deltas that arrived in one upstream read leave as one message (README, "Natural batching").
            const { item, after } = await joinBuffered(pulled.value, next, deltas.buffered);
            // `start` is the first message, and headers go out with it: still time to add one.
            if (item.type === "start" && item.droppedParams) ctx.responseHeader.set(DROPPED_PARAMS_HEADER, item.droppedParams.join(","));
            yield deltaToProto(item, sequence++);
            pulled = after ?? (await next());
          }
        } finally {
          // What for-await would do: on an early exit (connect stopped pulling) the pipeline cleans up; a finished source does nothing.
          await source.return(undefined).catch(() => undefined);
        }
      } catch (error) {
        throw toConnectError(error);
      } finally {
        link.release();
      }
    },

    async chat(req, ctx) {
      const principal = await identify(ctx);
      const { request, ...context } = begin(req, ctx);
      const link = pipelineSignal(ctx);
      try {
        const result = await aggregateDeltas(
          pipeline.stream(request, {
            ...context,
            signal: link.signal,
            edge: "grpc-unary",
            ...deadlineOf(ctx),
            ...(principal ? { principal, onQuota: quotaMetadata(ctx) } : {}),
          }),
        );
        if (result.droppedParams.length > 0) ctx.responseHeader.set(DROPPED_PARAMS_HEADER, result.droppedParams.join(","));
        return resultToProto(result);
      } catch (error) {
        throw toConnectError(error);
      } finally {
        link.release();
      }
    },

    async listModels(_req, ctx) {
      const principal = await identify(ctx);
      return create(ListModelsResponseSchema, {
        models: pipeline
          .catalog()
          .filter((model) => mayUse(principal, model.id))
          .map((model) => create(ModelSchema, model)),
      });
    },
  };
}
