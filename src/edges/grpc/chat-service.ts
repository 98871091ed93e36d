import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  CancelStreamResponseSchema,
  type ChatService,
  ListModelsResponseSchema,
  ModelCapabilitiesSchema,
  ModelSchema,
  CachePolicy as ProtoCachePolicy,
  type StreamChatRequest,
  type StreamChatResponse,
} from "../../../gen/sluice/v1/chat_service_pb.js";
import { type CallContext, type CallItem, type CallLayer, DROPPED_PARAMS_HEADER, type StreamOptions } from "../../call/call-layer.js";
import type { Capabilities } from "../../config/capability-table.js";
import { aggregateDeltas } from "../../core/aggregate.js";
import type { CachePolicy } from "../../core/cache-policy.js";
import type { Delta } from "../../core/delta.js";
import type { DeltaSink, Feed } from "../../core/delta-sink.js";
import { GatewayError, toGatewayError } from "../../core/errors.js";
import type { Heartbeat } from "../../core/heartbeats.js";
import { joinBuffered, joiningSink } from "../../core/join-deltas.js";
import type { Exchange } from "../../http/exchange.js";
import type { ResponseState } from "../../response-state/response-state.js";
import type { Numbered } from "../../resume/resumable-streams.js";
import type { Principal } from "../../tenancy/principal.js";
import { parseTagsHeader, TAGS_HEADER } from "../../tenancy/tags.js";
import { toConnectError } from "./connect-errors.js";
import { chatRequestFromProto, gatewayToolsFromProto, type ProtoChatRequest } from "./from-proto.js";
import { callerOf, deadlineOf, exchangeOf, pipelineSignal, setQuota } from "./handler-call.js";
import { type MessageOut, PUSHED, type PushedImpl } from "./lean-grpc-stream.js";
import { EXCHANGE } from "./rpc-handler.js";
import { storedCall } from "./stored-call.js";
import { textFrame } from "./text-frame.js";
import { deltaToProto, resultToProto } from "./to-proto.js";

type ModelInfo = Awaited<ReturnType<CallLayer["models"]>>[number];

export interface ChatServiceOptions {
  /** The life of each call: who, plain or resumable, heartbeats, quota, resume, cancel, models. */
  readonly calls: CallLayer;
  /** Nesting allowed in tool schemas (limits.maxJsonDepth). */
  readonly maxJsonDepth: number;
  /** Stored responses (config.responses): `store` and `previous_response_id`; absent, both are refused by name. */
  readonly responseState?: ResponseState;
}

/** The proto's cache_policy in the call layer's words (an unknown number is the default). */
const CACHE_POLICY: Readonly<Record<number, CachePolicy>> = {
  [ProtoCachePolicy.UNSPECIFIED]: "default",
  [ProtoCachePolicy.NO_LOOKUP]: "no_lookup",
  [ProtoCachePolicy.NO_STORE]: "no_store",
  [ProtoCachePolicy.BYPASS]: "bypass",
};

/** Trailer sent when a resumable stream stops being resumable (its backlog bound, or the store failing). */
export const RESUMABLE_TRAILER = "sluice-resumable";

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

/** sluice.v1.ChatService over gRPC, gRPC-Web and Connect. */
/** Capabilities on the wire: unknown stays unset (the fields are `optional`), sizes as uint64. */
function capabilitiesToProto(c: Capabilities) {
  return create(ModelCapabilitiesSchema, {
    ...(c.contextWindow === undefined ? {} : { contextWindow: BigInt(c.contextWindow) }),
    ...(c.maxOutputTokens === undefined ? {} : { maxOutputTokens: BigInt(c.maxOutputTokens) }),
    ...(c.tools === undefined ? {} : { tools: c.tools }),
    ...(c.vision === undefined ? {} : { vision: c.vision }),
    ...(c.jsonSchema === undefined ? {} : { jsonSchema: c.jsonSchema }),
    ...(c.reasoning === undefined ? {} : { reasoning: c.reasoning }),
    ...(c.promptCaching === undefined ? {} : { promptCaching: c.promptCaching }),
  });
}

function modelToProto(model: ModelInfo) {
  return create(ModelSchema, {
    id: model.id,
    provider: model.provider,
    upstreamModel: model.upstreamModel,
    ...(model.capabilities ? { anyTarget: capabilitiesToProto(model.capabilities.anyTarget), everyTarget: capabilitiesToProto(model.capabilities.everyTarget) } : {}),
  });
}

/** The stream option of a request's `mcp_servers`, when it names any. */
function gatewayToolsOption(req: ProtoChatRequest): Pick<StreamOptions, "gatewayTools"> {
  const gatewayTools = gatewayToolsFromProto(req);
  return gatewayTools ? { gatewayTools } : {};
}

export function createChatService(options: ChatServiceOptions): ServiceImpl<typeof ChatService> {
  const { calls } = options;
  const begin = async (req: ProtoChatRequest, ctx: HandlerContext, principal: Principal | undefined) => {
    try {
      const stored = await storedCall(options.responseState, req, chatRequestFromProto(req, options.maxJsonDepth), principal);
      return { stored, tags: parseTagsHeader(ctx.requestHeader.get(TAGS_HEADER) ?? undefined) };
    } catch (error) {
      throw toConnectError(error);
    }
  };
  const identify = (ctx: HandlerContext) => callerOf(calls, ctx);
  const callOf = (ctx: HandlerContext, edge: string, signal: AbortSignal, tags: Readonly<Record<string, string>>): CallContext => ({ ...exchangeOf(ctx), edge, signal, ...deadlineOf(ctx), tags });

  /**
   * A StreamChat call begun, as both forms (pushed and generator) begin it:
   * the key, the request, the pipeline's signal, and `headers` to send the
   * key's quota once, before the first message or the error.
   */
  const openStreamChat = async (req: StreamChatRequest, ctx: HandlerContext) => {
    const principal = await identify(ctx);
    const { stored, tags } = await begin(req, ctx, principal);
    const heartbeatMs = heartbeatInterval(req.streamOptions?.heartbeatIntervalMs);
    const link = pipelineSignal(ctx);
    const call = calls.stream(stored.request, principal, callOf(ctx, "grpc", link.signal, tags), {
      heartbeatMs,
      resumable: req.streamOptions?.resumable === true,
      cachePolicy: CACHE_POLICY[req.cachePolicy],
      ...gatewayToolsOption(req),
      ...stored.options,
    });
    let quotaSent = false;
    const headers = () => {
      if (quotaSent) return;
      quotaSent = true;
      setQuota(ctx, call.quota());
    };
    return { call, link, headers, keep: stored.keep };
  };

  /**
   * StreamChat as the lean gRPC path runs it: each item the call pushes
   * becomes a message written in the same call (deltas of one upstream read
   * joined, as the generator form does), and the call is told to wait only
   * when the client's buffer is full.
   */
  const pushedStreamChat = async (req: StreamChatRequest, ctx: HandlerContext, out: MessageOut<StreamChatResponse>): Promise<void> => {
    const { call, link, headers, keep } = await openStreamChat(req, ctx);
    try {
      await new Promise<void>((resolve, reject) => {
        const state = { last: 0n };
        let sequence = 0;
        let waiting = false;
        let feed: Feed | undefined;
        const send = (message: StreamChatResponse | Uint8Array): boolean => {
          if ((message instanceof Uint8Array ? out.sendFrame(message) : out.send(message)) && !waiting) return true;
          if (waiting) return false;
          waiting = true;
          out.drained().then(
            () => {
              waiting = false;
              feed?.resume();
            },
            (error: unknown) => feed?.cancel(toGatewayError(error)),
          );
          return false;
        };
        const writer: DeltaSink<CallItem> = {
          push(item) {
            headers();
            if (call.resumable) return send(resumableMessage(item as Numbered | Heartbeat, state, ctx));
            const delta = item as Delta | Heartbeat;
            if (delta.type !== "heartbeat") call.observe?.(delta);
            // `start` is the first message, and headers go out with it: still time to add one.
            if (delta.type === "start" && delta.droppedParams) ctx.responseHeader.set(DROPPED_PARAMS_HEADER, delta.droppedParams.join(","));
            if (delta.type === "text") return send(textFrame(sequence++, delta.text));
            return send(deltaToProto(delta, BigInt(sequence++)));
          },
          end(error) {
            if (!error) return void keep().then(resolve, (refused: unknown) => reject(toConnectError(refused)));
            headers();
            reject(toConnectError(error));
          },
        };
        // Deltas that arrived in one upstream read leave as one message (docs/streams.md, "Natural batching"); a resumable stream's keep their sequences.
        feed = call.relay(call.resumable ? writer : joiningSink<Heartbeat | Numbered>(writer as DeltaSink<Delta | Heartbeat | Numbered>));
      });
    } finally {
      // Trailers go out after the last message, whichever way the call ended.
      if (call.takeNotResumable()) ctx.responseTrailer.set(RESUMABLE_TRAILER, "false");
      link.release();
    }
  };

  const service: ServiceImpl<typeof ChatService> = {
    async *streamChat(req, ctx) {
      const { call, link, headers, keep } = await openStreamChat(req, ctx);
      const { items } = call;
      try {
        const state = { last: 0n };
        let sequence = 0n;
        const next = () => items.next();
        try {
          for (let pulled = await next(); pulled.done !== true; ) {
            headers();
            const value = pulled.value;
            if (call.resumable) {
              yield resumableMessage(value as Numbered | Heartbeat, state, ctx);
              pulled = await next();
              continue;
            }
            // Deltas that arrived in one upstream read leave as one message (docs/streams.md, "Natural batching").
            const { item, after } = await joinBuffered(value as Delta | Heartbeat, next as () => Promise<IteratorResult<Delta | Heartbeat, void>>, call.buffered);
            if (item.type !== "heartbeat") call.observe?.(item);
            // `start` is the first message, and headers go out with it: still time to add one.
            if (item.type === "start" && item.droppedParams) ctx.responseHeader.set(DROPPED_PARAMS_HEADER, item.droppedParams.join(","));
            yield deltaToProto(item, sequence++);
            pulled = after ?? (await next());
          }
        } finally {
          // What for-await would do: on an early exit (connect stopped pulling) the pipeline cleans up; a finished source does nothing.
          await items.return(undefined).catch(() => undefined);
        }
        await keep();
      } catch (error) {
        headers();
        throw toConnectError(error);
      } finally {
        // Trailers go out after the generator ends, whichever way it ended.
        if (call.takeNotResumable()) ctx.responseTrailer.set(RESUMABLE_TRAILER, "false");
        link.release();
      }
    },

    async chat(req, ctx) {
      const principal = await identify(ctx);
      const { stored, tags } = await begin(req, ctx, principal);
      const link = pipelineSignal(ctx);
      const call = calls.stream(stored.request, principal, callOf(ctx, "grpc-unary", link.signal, tags), { heartbeatMs: 0, cachePolicy: CACHE_POLICY[req.cachePolicy], ...gatewayToolsOption(req), ...stored.options });
      try {
        const result = await aggregateDeltas(call.whole());
        await stored.keep();
        setQuota(ctx, call.quota());
        if (result.droppedParams.length > 0) ctx.responseHeader.set(DROPPED_PARAMS_HEADER, result.droppedParams.join(","));
        return resultToProto(result);
      } catch (error) {
        setQuota(ctx, call.quota());
        throw toConnectError(error);
      } finally {
        link.release();
      }
    },

    async *resumeStream(req, ctx) {
      const principal = await identify(ctx);
      const heartbeatMs = heartbeatInterval(req.heartbeatIntervalMs);
      const after = afterSequence(req.afterSequence);
      try {
        const { items } = await calls.resume(req.responseId, principal, ctx.signal, { after, heartbeatMs });
        const state = { last: BigInt(Math.max(0, after)) };
        for await (const item of items) yield resumableMessage(item, state, ctx);
        ctx.signal.throwIfAborted();
      } catch (error) {
        throw toConnectError(error);
      }
    },

    async cancelStream(req, ctx) {
      const principal = await identify(ctx);
      try {
        await calls.cancel(req.responseId, principal);
        return create(CancelStreamResponseSchema);
      } catch (error) {
        throw toConnectError(error);
      }
    },

    async listModels(_req, ctx) {
      const exchange: Exchange | undefined = ctx.values.get(EXCHANGE);
      try {
        const models = await calls.models(ctx.requestHeader.get("authorization") ?? undefined, exchange?.edge ?? "grpc", exchange?.fields, exchange?.remote);
        return create(ListModelsResponseSchema, { models: models.map(modelToProto) });
      } catch (error) {
        throw toConnectError(error);
      }
    },
  };
  return Object.assign(service, { [PUSHED]: { streamChat: pushedStreamChat as unknown as PushedImpl } });
}
