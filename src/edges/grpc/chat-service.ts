import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { aggregateDeltas } from "../../core/aggregate.js";
import { GatewayError } from "../../core/errors.js";
import { type Heartbeat, withHeartbeats } from "../../core/heartbeats.js";
import { joinBuffered } from "../../core/join-deltas.js";
import { requestIdFrom } from "../../core/request-id.js";
import type { Context } from "@opentelemetry/api";
import type { Exchange } from "../../http/exchange.js";
import type { ChatPipeline } from "../../pipeline/chat-pipeline.js";
import { EXCHANGE } from "../../server/rpc-handler.js";
import type { Numbered, ResumableStreams } from "../../resume/resumable-streams.js";
import type { Quota } from "../../store/tenant-store.js";
import type { ModelViewer, Principal } from "../../tenancy/principal.js";
import { quotaHeaders } from "../../tenancy/quota-headers.js";
import type { Tenancy } from "../../tenancy/tenancy.js";
import {
  CancelStreamResponseSchema,
  ChatService,
  ListModelsResponseSchema,
  ModelSchema,
  type StreamChatResponse,
} from "../../../gen/sluice/v1/chat_service_pb.js";
import { abortReason, toConnectError } from "./connect-errors.js";
import { chatRequestFromProto, type ProtoChatRequest } from "./from-proto.js";
import { deltaToProto, resultToProto } from "./to-proto.js";

export interface ChatServiceOptions {
  readonly pipeline: ChatPipeline;
  /** Nesting allowed in tool schemas (limits.maxJsonDepth). */
  readonly maxJsonDepth: number;
  /** Who a request is (its `authorization` metadata); every request is anonymous without it. */
  readonly tenancy?: Pick<Tenancy, "identify" | "viewer">;
  /** Resumable streams (stream_options.resumable, ResumeStream, CancelStream); both RPCs answer NOT_FOUND without it. */
  readonly resumable?: ResumableStreams;
}

/** Trailer sent when a resumable stream stops being resumable (its backlog bound, or the store failing). */
export const RESUMABLE_TRAILER = "sluice-resumable";

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

/** Who a ListModels call is for (the admin key sees every alias); everyone sees everything without tenancy. Throws UNAUTHENTICATED. */
async function viewerOf(ctx: HandlerContext, tenancy: Pick<Tenancy, "viewer"> | undefined): Promise<ModelViewer> {
  if (!tenancy) return { sees: () => true };
  const exchange: Exchange | undefined = ctx.values.get(EXCHANGE);
  try {
    const viewer = await tenancy.viewer(ctx.requestHeader.get("authorization") ?? undefined, exchange?.edge ?? "grpc");
    if (viewer.principal && exchange) exchange.fields.key = viewer.principal.name;
    return viewer;
  } catch (error) {
    throw toConnectError(error);
  }
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

/**
 * The message for one item of a resumable stream, original or resumed:
 * each delta keeps its stored sequence; a heartbeat repeats the sequence
 * of the message before it (resuming after it misses nothing). A plain
 * function, not a generator stage: this runs per delta.
 */
function resumableMessage(item: Numbered | Heartbeat, state: { last: bigint }, ctx: HandlerContext): StreamChatResponse {
  if ("type" in item) return deltaToProto(item, state.last);
  state.last = BigInt(item.sequence);
  if (item.delta.type === "start" && item.delta.droppedParams) ctx.responseHeader.set(DROPPED_PARAMS_HEADER, item.delta.droppedParams.join(","));
  return deltaToProto(item.delta, state.last);
}

/** ResumeStream's after_sequence as a number; unset: -1, everything. Past 2^53 nothing is left to send anyway. */
function afterSequence(value: bigint | undefined): number {
  if (value === undefined) return -1;
  return value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(value);
}

const NO_RESUME = () => new GatewayError("not_found", "resumable streams are not served here");

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
      const start = (signal: AbortSignal) =>
        pipeline.stream(request, {
          ...context,
          signal,
          edge: "grpc",
          ...deadlineOf(ctx),
          ...(principal ? { principal, onQuota: quotaMetadata(ctx) } : {}),
        });
      try {
        if (req.streamOptions?.resumable && options.resumable) {
          const entries = options.resumable.run({
            start,
            clientSignal: link.signal,
            ...(principal ? { principal } : {}),
            onNotResumable: () => ctx.responseTrailer.set(RESUMABLE_TRAILER, "false"),
          });
          const state = { last: 0n };
          for await (const item of interval > 0 ? withHeartbeats(entries, interval) : entries) yield resumableMessage(item, state, ctx);
          return;
        }
        const deltas = start(link.signal);
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

    async *resumeStream(req, ctx) {
      const principal = await identify(ctx);
      const interval = heartbeatInterval(req.heartbeatIntervalMs);
      const after = afterSequence(req.afterSequence);
      try {
        if (!options.resumable) throw NO_RESUME();
        const { entries } = await options.resumable.resume(req.responseId, principal, ctx.signal);
        async function* unseen() {
          for await (const entry of entries) if (entry.sequence > after) yield entry;
        }
        const state = { last: BigInt(Math.max(0, after)) };
        for await (const item of interval > 0 ? withHeartbeats(unseen(), interval) : unseen()) yield resumableMessage(item, state, ctx);
        ctx.signal.throwIfAborted();
      } catch (error) {
        throw toConnectError(error);
      }
    },

    async cancelStream(req, ctx) {
      const principal = await identify(ctx);
      try {
        if (!options.resumable) throw NO_RESUME();
        await options.resumable.cancel(req.responseId, principal);
        return create(CancelStreamResponseSchema);
      } catch (error) {
        throw toConnectError(error);
      }
    },

    async listModels(_req, ctx) {
      const viewer = await viewerOf(ctx, options.tenancy);
      return create(ListModelsResponseSchema, {
        models: pipeline
          .catalog()
          .filter((model) => viewer.sees(model.id))
          .map((model) => create(ModelSchema, model)),
      });
    },
  };
}
