import type { Context } from "@opentelemetry/api";
import type { CachePolicy } from "../core/cache-policy.js";
import type { CallFacts, CallSummary } from "../core/call-summary.js";
import type { ChatRequest } from "../core/chat-request.js";
import { quoteClientValue } from "../core/client-text.js";
import type { Delta } from "../core/delta.js";
import { type DeltaSink, type Feed, pushFrom } from "../core/delta-sink.js";
import type { EmbedRequest, EmbedResult } from "../core/embed-request.js";
import { GatewayError } from "../core/errors.js";
import { type Heartbeat, withHeartbeats, withPushedHeartbeats } from "../core/heartbeats.js";
import type { ChatPipeline, DeltaStream } from "../pipeline/chat-pipeline.js";
import type { EmbedPipeline } from "../pipeline/embed-pipeline.js";
import type { StreamContext } from "../pipeline/stream-context.js";
import type { Numbered, ResumableStreams } from "../resume/resumable-streams.js";
import type { ModelInfo } from "../routing/route-table.js";
import type { ReplayStore } from "../store/replay-store.js";
import { mayUse, type Principal } from "../tenancy/principal.js";
import { type AllocationTags, allocationTags, droppedTagsHeader, NO_TAGS, TAGS_DROPPED_HEADER } from "../tenancy/tags.js";
import type { Tenancy } from "../tenancy/tenancy.js";
import { type GatewayToolsDeps, type GatewayToolsRequest, gatewayToolLoop } from "./gateway-tool-loop.js";
import { type OverheadReport, overheadAtFirstWrite } from "./overhead.js";
import { createReplayCapture, keepReplay, type ReplayKind, restoreReplay } from "./replay-turns.js";
import { wholeAnswer } from "./whole-answer.js";

/**
 * What one client call is, whatever wire it came on: the request's id,
 * trace and access-line fields, the signal that says the client left, its
 * deadline. Edges fill it from their transport (connect's handler
 * context, an HTTP exchange) and hand it down unchanged.
 */
export interface CallContext {
  readonly requestId: string;
  /** Which edge and shape (grpc, grpc-unary, openai-sse, anthropic-json…), for logs and metrics. */
  readonly edge: string;
  /** Aborts with a GatewayError (`canceled`, `deadline_exceeded`, `shutting_down`) when the client leaves. */
  readonly signal: AbortSignal;
  readonly trace?: Context;
  readonly fields?: Record<string, unknown>;
  /** The client's deadline on the performance.now() clock. */
  readonly deadlineAt?: number;
  /** The tags of its `sluice-tags` header (tenancy/tags.ts), parsed by the edge with the rest of the request. */
  readonly tags?: Readonly<Record<string, string>>;
  /** A batch line: it yields to interactive calls at each provider's gate (batch.maxShare). */
  readonly background?: boolean;
  /** The client's address, for the audit log's events about this call (refusals, PII decisions, local-only routing). */
  readonly remote?: string;
  /** performance.now() when the request arrived: where its `sluice-overhead-ms` starts (none without it). */
  readonly arrivedAt?: number;
}

/** How a call streams, beside its request. */
export interface StreamOptions {
  /** Silence after which a heartbeat item is handed out; 0: none. */
  readonly heartbeatMs: number;
  /** Asked for a resumable stream (served only where resumable streams are configured). */
  readonly resumable?: boolean;
  /** The Chat Completions edge's include_usage, kept for a resume on that edge. */
  readonly includeUsage?: boolean;
  /** What the caller lets the response cache do (Cache-Control, gRPC cache_policy). */
  readonly cachePolicy?: CachePolicy;
  /** A per-target rewrite of the request (an edge's replayed thinking signatures). */
  readonly prepare?: StreamContext["prepare"];
  /**
   * Keep the answer's thinking signatures for the next tool turn, and put
   * back those of the turns this request replays (replay-turns.ts): for
   * edges whose API has no field for them. The edge calls
   * `CallStream.keepReplay` before it writes the end.
   */
  readonly replay?: ReplayKind;
  /**
   * Sees each delta of a fresh stream before the edge writes it. Inside a
   * resumable stream the call layer applies it; on a plain stream it comes
   * back as `CallStream.observe` for the edge's write loop to call, so that
   * no generator stands between the pipeline and the writer per delta.
   */
  readonly observe?: (delta: Delta) => void;
  /**
   * MCP servers whose tools the gateway runs for this call
   * (gateway-tool-loop.ts): the answer is the whole tool loop's, served as
   * a plain stream (never resumable: each turn is a model call of its own).
   */
  readonly gatewayTools?: GatewayToolsRequest;
}

/** Response header (HTTP) or metadata (gRPC) naming the parameters not acted on, in each edge's own names. */
export const DROPPED_PARAMS_HEADER = "sluice-dropped-params";

/** What a call hands its edge: a delta, a numbered delta (resumable), or a heartbeat. */
export type CallItem = Delta | Numbered | Heartbeat;

/** The delta inside an item, or the heartbeat. */
export function deltaOf(item: CallItem): Delta | Heartbeat {
  return "sequence" in item ? item.delta : item;
}

/**
 * One call's stream and what an edge writes beside it, as data the edge
 * reads when it writes (not callbacks that climb back up): the quota
 * headers are set once the key was admitted or refused, before the first
 * item or the error; `notResumable` turns true (once) when a resumable
 * stream stops being resumable.
 */
export interface CallStream {
  /** The items, pulled: for edges that fold a whole answer. Use this or `relay`, not both. */
  readonly items: AsyncGenerator<CallItem, void, undefined>;
  /** The items pushed into the edge's writer under its credit (core/delta-sink.ts): how edges write a stream. */
  readonly relay: (sink: DeltaSink<CallItem>) => Feed;
  /** Items are numbered (a resumable stream, served where resumable streams are configured) or plain deltas. */
  readonly resumable: boolean;
  /** Items already decoded and waiting (a plain stream's upstream read): joining them waits for no I/O. */
  readonly buffered: () => number;
  /**
   * Response headers known before the first item: the key's remaining
   * limits (OpenAI's and Sluice's names; none without a key), what the
   * response cache did (`sluice-cache`), and `sluice-overhead-ms`
   * (call/overhead.ts), measured at the first read: edges read this when
   * they commit their headers.
   */
  readonly quota: () => Readonly<Record<string, string>>;
  /** True once, at the first read after the stream stopped being resumable. */
  readonly takeNotResumable: () => boolean;
  /** A plain stream's `StreamOptions.observe`: the edge calls it for each delta it writes (numbered ones were observed already). */
  readonly observe?: (delta: Delta) => void;
  /** Stores what the next tool turn must replay (`StreamOptions.replay`); resolves at once otherwise. Before the end is written: a client may send its next turn the moment it sees it. */
  readonly keepReplay: () => Promise<void>;
  /**
   * The deltas of an answer the edge folds whole (a non-streamed response,
   * a batch line, a replay), each observed, bounded by `limits.maxAnswerBytes`
   * (whole-answer.ts). Use this, `items` or `relay`, not two.
   */
  readonly whole: () => AsyncGenerator<Delta, void, undefined>;
}

/** Items of a resumed stream the client already has are skipped; `skipped` sees them (an encoder rebuilding its state). */
export interface ResumeOptions {
  /** The last sequence the client has; -1: everything. */
  readonly after: number;
  readonly heartbeatMs: number;
  readonly skipped?: (entry: Numbered) => void;
}

/**
 * The life of one client call, the same under every edge: who the caller
 * is (before its body is read), its stream plain or resumable, heartbeats,
 * quota and resume, cancel, and the models its key may see. Edges are
 * codecs around it: they decode their wire into a ChatRequest and a
 * CallContext and encode what comes back; nothing here knows a wire.
 */
export interface CallLayer {
  /** The caller's key from its `authorization` (or `x-api-key`) value; its name goes on the access line. Throws `unauthenticated`. */
  identify(credential: string | undefined, edge: string, fields?: Record<string, unknown>, remote?: string): Promise<Principal | undefined>;
  stream(request: ChatRequest, principal: Principal | undefined, call: CallContext, options: StreamOptions): CallStream;
  /** The rest of a resumable stream, after `options.after`; throws `not_found`, `permission_denied`, the original's error. */
  resume(
    id: string,
    principal: Principal | undefined,
    signal: AbortSignal,
    options: ResumeOptions,
  ): Promise<{ readonly items: AsyncGenerator<Numbered | Heartbeat, void, undefined>; readonly includeUsage: boolean; readonly alias?: string }>;
  /** Stops the upstream of a resumable stream on whichever replica runs it. */
  cancel(id: string, principal: Principal | undefined): Promise<void>;
  /**
   * The aliases a credential may see: its key's allowlist, or every alias
   * for the admin key (the console lists aliases with it; it streams
   * nothing) and while authentication is off. Throws `unauthenticated`.
   */
  models(credential: string | undefined, edge: string, fields?: Record<string, unknown>, remote?: string): Promise<readonly ModelInfo[]>;
  /**
   * One embedding call: the same key, limits, budget, attempts and records
   * as a stream, with one answer. `quota` is set once the key was admitted
   * or refused (before `result` settles), for the edge's headers.
   */
  embed(request: EmbedRequest, principal: Principal | undefined, call: CallContext): EmbedCall;
  /** Throws what a stream of `alias` would be refused with first: `unknown_model`, or `permission_denied` for the key (for calls that start no stream, such as counting tokens). */
  checkAlias(principal: Principal | undefined, alias: string): void;
}

/** An embedding call under way: its answer, and the key's remaining limits as headers. */
export interface EmbedCall {
  readonly result: Promise<EmbedResult>;
  readonly quota: () => Readonly<Record<string, string>>;
}

export interface CallLayerOptions {
  readonly pipeline: ChatPipeline;
  /** Without it every embedding call is refused as not served here. */
  readonly embeddings?: EmbedPipeline;
  /** Without it every call is anonymous. */
  readonly tenancy?: Pick<Tenancy, "identify" | "viewer" | "tagKeys">;
  /** Without it a resumable request streams plainly, and resume and cancel answer `not_found`. */
  readonly resumable?: ResumableStreams;
  /** Where thinking signatures wait for the next tool turn (shared by replicas with a Redis store). */
  readonly replayStore?: ReplayStore;
  /** limits.maxAnswerBytes as configured now: the most an answer folded whole may hold (unbounded when absent). */
  readonly maxAnswerBytes?: () => number;
  /** Told each call's `sluice-overhead-ms` once, when its headers are committed (the histogram). */
  readonly onOverhead?: OverheadReport;
  /** The MCP toolbox for calls that ask the gateway to run tools; without it every such call is refused (no server is registered). */
  readonly gatewayTools?: GatewayToolsDeps;
}

const NO_RESUME = () => new GatewayError("not_found", "resumable streams are not served here");
const NONE = (): number => 0;

const NOTHING_TO_KEEP = async (): Promise<void> => undefined;

/** The options with the replay capture observing every delta and the stored signatures restored per target. */
function withReplay(options: StreamOptions, store: ReplayStore, kind: ReplayKind): StreamOptions & { readonly keepReplay: () => Promise<void> } {
  const capture = createReplayCapture();
  const { observe, prepare } = options;
  return {
    ...options,
    observe: observe
      ? (delta) => {
          capture.observe(delta);
          observe(delta);
        }
      : (delta) => capture.observe(delta),
    prepare: async (request, target) => {
      const restored = await restoreReplay(request, store, { provider: target.provider.name, model: target.model, kind: target.provider.kind }, kind);
      return prepare ? prepare(restored, target) : restored;
    },
    keepReplay: () => keepReplay(capture, store),
  };
}

/** Passes deltas through, showing each to `observe`, for resumable streams (a plain one is observed by its edge's loop). */
async function* observed(deltas: AsyncIterable<Delta>, observe: (delta: Delta) => void): AsyncGenerator<Delta, void, undefined> {
  for await (const delta of deltas) {
    observe(delta);
    yield delta;
  }
}

/** Numbered entries after `after`; those before go to `skipped`. */
async function* unseen(entries: AsyncIterable<Numbered>, after: number, skipped?: (entry: Numbered) => void): AsyncGenerator<Numbered, void, undefined> {
  for await (const entry of entries) {
    if (entry.sequence > after) yield entry;
    else skipped?.(entry);
  }
}

/** The tags a call is charged under and the header naming those dropped (none without tenancy: nothing is charged). */
function tagsFor(tenancy: CallLayerOptions["tenancy"], labels: Readonly<Record<string, string>>, call: CallContext): { readonly allocation: AllocationTags; readonly headers: Readonly<Record<string, string>> } {
  if (!tenancy) return { allocation: NO_TAGS, headers: {} };
  const allocation = allocationTags(labels, call.tags ?? {}, tenancy.tagKeys());
  const dropped = droppedTagsHeader(allocation.dropped);
  return { allocation, headers: dropped === undefined ? {} : { [TAGS_DROPPED_HEADER]: dropped } };
}

/**
 * The call's one record (core/call-summary.ts). Its facts are the
 * exchange's access-line fields, so what the stages settle is on the
 * access line without any of them knowing the exchange; a call without an
 * exchange (a batch line) gets a record of its own.
 */
function summaryFor(call: CallContext): CallSummary {
  return { headers: {}, facts: (call.fields ?? {}) as CallFacts, record: {}, upstream: {} };
}

export function createCallLayer(options: CallLayerOptions): CallLayer {
  const { pipeline, resumable } = options;
  return {
    async identify(credential, edge, fields, remote) {
      const principal = await options.tenancy?.identify(credential, edge, remote);
      if (principal && fields) fields.key = principal.name;
      return principal;
    },

    stream(request, principal, call, requested) {
      const streamOptions = options.replayStore && requested.replay ? withReplay(requested, options.replayStore, requested.replay) : { ...requested, keepReplay: NOTHING_TO_KEEP };
      const summary = summaryFor(call);
      let notResumable = false;
      const tagged = tagsFor(options.tenancy, request.metadata.labels, call);
      const context: StreamContext = {
        ...call,
        summary,
        ...(Object.keys(tagged.allocation.tags).length > 0 ? { tags: tagged.allocation.tags } : {}),
        ...(streamOptions.prepare ? { prepare: streamOptions.prepare } : {}),
        ...(streamOptions.cachePolicy ? { cachePolicy: streamOptions.cachePolicy } : {}),
        ...(principal ? { principal } : {}),
      };
      const withBeats = <T>(source: AsyncGenerator<T, void, undefined>) => (streamOptions.heartbeatMs > 0 ? withHeartbeats(source, streamOptions.heartbeatMs) : source);
      const maxAnswerBytes = options.maxAnswerBytes?.() ?? Number.POSITIVE_INFINITY;
      const overhead = overheadAtFirstWrite(call.arrivedAt, summary.upstream, call.edge, options.onOverhead);
      const base = {
        keepReplay: streamOptions.keepReplay,
        quota: () => ({ ...summary.headers, ...tagged.headers, ...overhead() }),
        takeNotResumable: () => {
          if (!notResumable) return false;
          notResumable = false;
          return true;
        },
      };
      const { gatewayTools } = streamOptions;
      if (gatewayTools) {
        // Each turn is a model call with a record of its own; the first one's headers (quota, cache) are the response's.
        const turnContext = (turn: number): StreamContext => (turn === 0 ? context : { ...context, summary: { ...summaryFor(call), headers: {} } });
        const deltas = gatewayToolLoop(request, {
          use: gatewayTools,
          served: options.gatewayTools,
          principal,
          signal: call.signal,
          runTurn: (turnRequest, turn) => pipeline.stream(turnRequest, turnContext(turn)),
        });
        const items = withBeats(deltas);
        return {
          ...base,
          resumable: false,
          items,
          relay: (sink) => pushFrom(items, sink),
          buffered: NONE,
          ...(streamOptions.observe ? { observe: streamOptions.observe } : {}),
          whole: () => wholeAnswer(items, maxAnswerBytes, streamOptions.observe),
        };
      }
      if (streamOptions.resumable && resumable) {
        const { observe } = streamOptions;
        const entries = resumable.run({
          start: (signal) => {
            const deltas = pipeline.stream(request, { ...context, signal });
            return observe ? observed(deltas, observe) : deltas;
          },
          clientSignal: call.signal,
          ...(principal ? { principal } : {}),
          ...(streamOptions.includeUsage !== undefined ? { includeUsage: streamOptions.includeUsage } : {}),
          alias: request.model,
          onNotResumable: () => {
            notResumable = true;
          },
        });
        const items = withBeats(entries);
        return { ...base, resumable: true, items, relay: (sink) => pushFrom(items, sink), buffered: NONE, whole: () => wholeAnswer(items, maxAnswerBytes) };
      }
      const { heartbeatMs } = streamOptions;
      const relay = (sink: DeltaSink<CallItem>): Feed => (heartbeatMs > 0 ? withPushedHeartbeats((beating) => pipeline.relay(request, context, beating), sink, heartbeatMs) : pipeline.relay(request, context, sink));
      // Pulled only by edges that fold a whole answer: made on first use, so a pushed stream starts nothing twice.
      let deltas: DeltaStream | undefined;
      let items: AsyncGenerator<CallItem, void, undefined> | undefined;
      const pulled = () => {
        deltas ??= pipeline.stream(request, context);
        return (items ??= withBeats(deltas));
      };
      return {
        ...base,
        resumable: false,
        get items() {
          return pulled();
        },
        relay,
        buffered: () => deltas?.buffered() ?? 0,
        ...(streamOptions.observe ? { observe: streamOptions.observe } : {}),
        whole: () => wholeAnswer(pulled(), maxAnswerBytes, streamOptions.observe),
      };
    },

    async resume(id, principal, signal, resumeOptions) {
      if (!resumable) throw NO_RESUME();
      const resumed = await resumable.resume(id, principal, signal);
      const rest = unseen(resumed.entries, resumeOptions.after, resumeOptions.skipped);
      return {
        includeUsage: resumed.includeUsage,
        ...(resumed.alias !== undefined ? { alias: resumed.alias } : {}),
        items: resumeOptions.heartbeatMs > 0 ? withHeartbeats(rest, resumeOptions.heartbeatMs) : rest,
      };
    },

    async cancel(id, principal) {
      if (!resumable) throw NO_RESUME();
      await resumable.cancel(id, principal);
    },

    embed(request, principal, call) {
      const summary = summaryFor(call);
      const tagged = tagsFor(options.tenancy, {}, call);
      const context: StreamContext = {
        ...call,
        summary,
        ...(Object.keys(tagged.allocation.tags).length > 0 ? { tags: tagged.allocation.tags } : {}),
        ...(principal ? { principal } : {}),
      };
      const result = options.embeddings ? options.embeddings.embed(request, context) : Promise.reject(new GatewayError("not_found", "embeddings are not served here"));
      const overhead = overheadAtFirstWrite(call.arrivedAt, summary.upstream, call.edge, options.onOverhead);
      return { result, quota: () => ({ ...summary.headers, ...tagged.headers, ...overhead() }) };
    },

    checkAlias(principal, alias) {
      if (!pipeline.catalog().some((model) => model.id === alias)) {
        throw new GatewayError("unknown_model", `unknown model ${quoteClientValue(alias)}: not configured on this gateway (see ListModels or GET /v1/models)`, { field: "model" });
      }
      if (!mayUse(principal, alias)) throw new GatewayError("permission_denied", `key ${principal?.name ?? ""} may not use model ${quoteClientValue(alias)}`, { field: "model" });
    },

    async models(credential, edge, fields, remote) {
      const viewer = options.tenancy ? await options.tenancy.viewer(credential, edge, remote) : undefined;
      if (viewer?.principal && fields) fields.key = viewer.principal.name;
      return viewer ? pipeline.catalog().filter((model) => viewer.sees(model.id)) : pipeline.catalog();
    },
  };
}
