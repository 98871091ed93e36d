import { aggregateDeltas } from "../../core/aggregate.js";
import { clipClientValue } from "../../core/client-text.js";
import { GatewayError, toGatewayError } from "../../core/errors.js";
import { withHeartbeats } from "../../core/heartbeats.js";
import { scanJson } from "../../core/json-scan.js";
import type { StructureLimits } from "../../core/structure-limits.js";
import type { Exchange } from "../../http/exchange.js";
import { type AnyRequest, type AnyResponse, decodePathSegment, headerOf, pathOf, sendJson, writeChunk } from "../../http/node-http.js";
import { type BodyLimits, readBody } from "../../http/read-body.js";
import { createByteBatch } from "../../http/byte-batch.js";
import { writable } from "../../http/writable.js";
import type { ChatPipeline, StreamContext } from "../../pipeline/chat-pipeline.js";
import { createMemoryReplayStore } from "../../store/memory-replay-store.js";
import type { ReplayStore } from "../../store/replay-store.js";
import type { Delta } from "../../core/delta.js";
import type { Numbered, ResumableStreams } from "../../resume/resumable-streams.js";
import { mayUse, type Principal } from "../../tenancy/principal.js";
import { quotaHeaders } from "../../tenancy/quota-headers.js";
import type { Tenancy } from "../../tenancy/tenancy.js";
import { chatRequestFromOpenAi, type OpenAiChatRequest } from "./from-openai.js";
import { openAiParam, toOpenAiError } from "./http-errors.js";
import { createReplayCapture, type ReplayCapture, restoreReplay } from "./replay-turns.js";
import { type ChunkEncoder, completionFromResult, createChunkEncoder } from "./to-openai.js";

export interface OpenAiFacadeOptions {
  readonly pipeline: ChatPipeline;
  readonly keepaliveMs: number;
  readonly limits: BodyLimits & StructureLimits;
  /** Longest a client may take no bytes before its stream is reset. */
  readonly sendTimeoutMs: number;
  /** Where thinking signatures wait for the next tool turn; an in-process store when absent. */
  readonly replayStore?: ReplayStore;
  /** Who a request is (its `authorization: Bearer` header, the OpenAI SDKs' apiKey); every request is anonymous without it. */
  readonly tenancy?: Pick<Tenancy, "identify">;
  /** Resumable streams (`stream_options.resumable`, GET /v1/chat/completions/{id}/stream); 404 without it. */
  readonly resumable?: ResumableStreams;
}

/**
 * One facade request's identity and the headers its limits add: the
 * principal the edge resolved, and x-ratelimit-* collected when the
 * pipeline admits (or refuses) it, sent with whatever response comes.
 */
interface Caller {
  readonly principal?: Principal;
  headers: Record<string, string>;
}

/**
 * Response header naming the parameters not acted on (OpenAI names): those
 * the facade does not model, and those the alias dropped for its target's
 * provider. The gRPC edge sends the same header for the latter.
 */
const DROPPED_PARAMS_HEADER = "sluice-dropped-params";

/** The header's value for the facade's own drops and the target's (a stream's start carries them); undefined when none. */
function droppedValue(own: readonly string[], target: readonly string[] = []): string | undefined {
  const all = new Set([...own, ...target.map(openAiParam)]);
  return all.size > 0 ? [...all].join(",") : undefined;
}

/** Passes deltas through, showing each to the replay capture. */
async function* observed(deltas: AsyncIterable<Delta>, capture: ReplayCapture): AsyncGenerator<Delta, void, undefined> {
  for await (const delta of deltas) {
    capture.observe(delta);
    yield delta;
  }
}

/**
 * The pipeline's view of a facade request. Stored thinking signatures are
 * put back per target, as each attempt is built: they verify only with the
 * provider and model that issued them, and failover may pick another.
 */
function streamContext(exchange: Exchange, edge: string, store: ReplayStore, caller: Caller): StreamContext {
  return {
    signal: exchange.signal,
    requestId: exchange.requestId,
    edge,
    trace: exchange.trace(),
    fields: exchange.fields,
    prepare: (request, target) => restoreReplay(request, store, { provider: target.provider.name, model: target.model }),
    ...(caller.principal
      ? {
          principal: caller.principal,
          onQuota: (quota) => {
            caller.headers = quotaHeaders(quota);
          },
        }
      : {}),
  };
}

/** Keeps the answer's signatures for the next tool turn. The store failing costs only that continuation, never this answer. */
async function keepReplay(capture: ReplayCapture, store: ReplayStore): Promise<void> {
  const kept = capture.result();
  if (kept) await store.put(kept.ids, kept.entry).catch(() => undefined);
}

/** Serves the facade's routes; false for paths outside /v1/. */
export type FacadeRoute = (req: AnyRequest, res: AnyResponse, exchange: Exchange) => Promise<void> | void | false;

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
};

/** An error response; `headers` are the key's quota headers when it has any. */
function sendError(res: AnyResponse, exchange: Exchange, reason: unknown, quota: Record<string, string> = {}): void {
  const error = toGatewayError(reason);
  exchange.code = error.code;
  const { status, headers, body } = toOpenAiError(error);
  sendJson(res, status, body, { ...quota, ...headers });
}

/** SSE comment sent when a resumable stream stops being resumable; the gRPC edge sends the same as a trailer. */
const NOT_RESUMABLE_COMMENT = ": sluice-resumable: false\n\n";

/** What writing one SSE stream needs besides its deltas. */
interface SseStream {
  readonly encoder: ChunkEncoder;
  readonly caller: Caller;
  /** Stored before [DONE] (the thinking signatures of a fresh answer). */
  readonly beforeDone?: () => Promise<void>;
  /** Set when a resumable stream stops being resumable: said in a comment line at the next write. */
  notResumable?: boolean;
  /** Shown each plain delta as it is written (the replay capture), without a generator between. */
  readonly observe?: (delta: Delta) => void;
  /** Deltas already decoded and waiting (the pipeline's count): while any wait, events join one write. */
  readonly buffered?: () => number;
  /** Request fields the facade did not act on (OpenAI names), said with the headers. */
  readonly droppedParams?: readonly string[];
}

/**
 * Streams deltas as `chat.completion.chunk` events; numbered deltas (a
 * resumable stream) carry their sequence in the `id:` line of their last
 * event, which EventSource sends back as Last-Event-ID. Headers are
 * committed with the first delta or the first keepalive, whichever comes
 * first: until then a failure is a plain HTTP error with the right status;
 * after it, an SSE error event and no `[DONE]`, so SDKs raise instead of
 * returning a truncated answer.
 */
async function writeSse(res: AnyResponse, exchange: Exchange, items: AsyncIterable<Delta | Numbered>, options: OpenAiFacadeOptions, sse: SseStream): Promise<void> {
  let committed = false;
  // Events not written yet: those of deltas decoded from one upstream read go out in one write.
  const batch = createByteBatch();
  const push = (part: string | Uint8Array) => batch.push(part);
  try {
    for await (const item of withHeartbeats(items, options.keepaliveMs)) {
      const delta = "sequence" in item ? item.delta : item;
      const targetDropped = delta.type === "start" ? delta.droppedParams : undefined;
      if (!committed) {
        const dropped = droppedValue(sse.droppedParams ?? [], targetDropped);
        res.writeHead(200, { ...SSE_HEADERS, ...sse.caller.headers, ...(dropped ? { [DROPPED_PARAMS_HEADER]: dropped } : {}) });
        committed = true;
      } else if (targetDropped && targetDropped.length > 0) {
        // A keepalive already sent the headers: say the whole list in a comment line instead.
        batch.push(`: ${DROPPED_PARAMS_HEADER}: ${droppedValue(sse.droppedParams ?? [], targetDropped)}\n\n`);
      }
      if (sse.notResumable) {
        batch.push(NOT_RESUMABLE_COMMENT);
        sse.notResumable = false;
      }
      if (delta.type === "heartbeat") batch.push(": keepalive\n\n");
      else if ("sequence" in item) {
        // A resumable stream's delta: its sequence goes on the id: line of its last event.
        const chunks = sse.encoder.encode(delta);
        for (let i = 0; i < chunks.length; i++) push(`${i === chunks.length - 1 ? `id: ${item.sequence}\n` : ""}data: ${JSON.stringify(chunks[i])}\n\n`);
      } else {
        sse.observe?.(delta);
        sse.encoder.events(delta, push);
      }
      // The next delta is already decoded: it joins this write, so nothing waits for it.
      if (batch.empty || (delta.type !== "heartbeat" && (sse.buffered?.() ?? 0) > 0)) continue;
      const flushed = writeChunk(res, batch.take());
      if (!flushed) await writable(res, exchange, options.sendTimeoutMs);
    }
    // Stored before [DONE]: a client may send the next tool turn the moment it sees the end.
    await sse.beforeDone?.();
    exchange.code = "ok";
    batch.push("data: [DONE]\n\n");
    res.end(batch.take());
  } catch (error) {
    if (exchange.signal.aborted) return;
    if (!committed) return sendError(res, exchange, error, sse.caller.headers);
    const { body } = toOpenAiError(error);
    exchange.code = toGatewayError(error).code;
    batch.push(`data: ${JSON.stringify(body)}\n\n`);
    res.end(batch.take());
  }
}

async function stream(res: AnyResponse, exchange: Exchange, parsed: OpenAiChatRequest, options: OpenAiFacadeOptions, store: ReplayStore, caller: Caller): Promise<void> {
  const capture = createReplayCapture();
  const sse: SseStream = {
    encoder: createChunkEncoder({ includeUsage: parsed.includeUsage }),
    caller,
    beforeDone: () => keepReplay(capture, store),
    droppedParams: parsed.droppedParams,
  };
  const context = streamContext(exchange, "openai-sse", store, caller);
  if (parsed.resumable && options.resumable) {
    const entries = options.resumable.run({
      start: (signal) => observed(options.pipeline.stream(parsed.request, { ...context, signal }), capture),
      clientSignal: exchange.signal,
      ...(caller.principal ? { principal: caller.principal } : {}),
      includeUsage: parsed.includeUsage,
      onNotResumable: () => {
        sse.notResumable = true;
      },
    });
    return writeSse(res, exchange, entries, options, sse);
  }
  const deltas = options.pipeline.stream(parsed.request, context);
  return writeSse(res, exchange, deltas, options, { ...sse, observe: (delta) => capture.observe(delta), buffered: deltas.buffered });
}

/** Last-Event-ID as the last sequence the client has; absent: -1, everything. */
function lastEventId(req: AnyRequest): number {
  const header = headerOf(req, "last-event-id");
  if (header === undefined || header === "") return -1;
  if (!/^\d{1,15}$/.test(header)) throw new GatewayError("invalid_request", "Last-Event-ID: must be a sequence number from an id: line", { field: "last_event_id" });
  return Number(header);
}

/**
 * GET /v1/chat/completions/{id}/stream: the rest of a resumable stream,
 * from after Last-Event-ID. Earlier deltas are read too and shown to the
 * encoder only, so its state (the completion id, pending usage) is the
 * original's.
 */
async function resumeStream(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: OpenAiFacadeOptions, id: string): Promise<void> {
  const caller = await callerOf(req, res, exchange, options);
  if (!caller) return;
  let after: number;
  let entries: AsyncGenerator<Numbered, void, undefined>;
  let encoder: ChunkEncoder;
  try {
    after = lastEventId(req);
    if (!options.resumable) throw new GatewayError("not_found", "resumable streams are not served here");
    const resumed = await options.resumable.resume(id, caller.principal, exchange.signal);
    entries = resumed.entries;
    encoder = createChunkEncoder({ includeUsage: resumed.includeUsage });
  } catch (error) {
    return sendError(res, exchange, error, caller.headers);
  }
  async function* unseen(): AsyncGenerator<Numbered, void, undefined> {
    for await (const entry of entries) {
      if (entry.sequence > after) yield entry;
      else encoder.encode(entry.delta);
    }
  }
  await writeSse(res, exchange, unseen(), options, { encoder, caller });
}

async function complete(res: AnyResponse, exchange: Exchange, parsed: OpenAiChatRequest, pipeline: ChatPipeline, store: ReplayStore, caller: Caller): Promise<void> {
  try {
    const capture = createReplayCapture();
    const deltas = pipeline.stream(parsed.request, streamContext(exchange, "openai-json", store, caller));
    const result = await aggregateDeltas(observed(deltas, capture));
    await keepReplay(capture, store);
    exchange.code = "ok";
    const dropped = droppedValue(parsed.droppedParams, result.droppedParams);
    sendJson(res, 200, completionFromResult(result), { ...caller.headers, ...(dropped ? { [DROPPED_PARAMS_HEADER]: dropped } : {}) });
  } catch (error) {
    if (!exchange.signal.aborted) sendError(res, exchange, error, caller.headers);
  }
}

/**
 * The request's key, from `authorization: Bearer`, checked before anything
 * else (an unauthenticated body is never read); its name goes on the access
 * line. Undefined when the response was already sent (401).
 */
async function callerOf(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: OpenAiFacadeOptions): Promise<Caller | undefined> {
  try {
    const principal = await options.tenancy?.identify(headerOf(req, "authorization"), "openai");
    if (principal) exchange.fields.key = principal.name;
    return { ...(principal ? { principal } : {}), headers: {} };
  } catch (error) {
    // A body left unread is discarded by Node after the response (as for a 413).
    sendError(res, exchange, error);
    return undefined;
  }
}

async function chatCompletions(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: OpenAiFacadeOptions, store: ReplayStore): Promise<void> {
  const caller = await callerOf(req, res, exchange, options);
  if (!caller) return;
  let parsed: OpenAiChatRequest;
  try {
    const raw = await readBody(req, options.limits);
    // Count and measure before parsing: JSON.parse and validation cost grows
    // with the number of values, and a hostile body must not buy that time.
    scanJson(raw, options.limits);
    let json: unknown;
    try {
      json = JSON.parse(raw.toString("utf8"));
    } catch {
      throw new GatewayError("invalid_request", "request body is not valid JSON");
    }
    parsed = chatRequestFromOpenAi(json, options.limits);
  } catch (error) {
    return sendError(res, exchange, error);
  }
  if (parsed.stream) await stream(res, exchange, parsed, options, store, caller);
  else await complete(res, exchange, parsed, options.pipeline, store, caller);
}

/** The aliases the caller's key may use (every alias when authentication is off). */
async function listModels(req: AnyRequest, res: AnyResponse, exchange: Exchange, options: OpenAiFacadeOptions, id?: string): Promise<void> {
  const caller = await callerOf(req, res, exchange, options);
  if (!caller) return;
  const models = options.pipeline
    .catalog()
    .filter((model) => mayUse(caller.principal, model.id))
    .map((model) => ({ id: model.id, object: "model", created: 0, owned_by: model.provider }));
  if (id === undefined) {
    exchange.code = "ok";
    return sendJson(res, 200, { object: "list", data: models });
  }
  const model = models.find((m) => m.id === id);
  if (!model) return sendError(res, exchange, new GatewayError("unknown_model", `unknown model ${JSON.stringify(clipClientValue(id))}: not configured on this gateway`, { field: "model" }));
  exchange.code = "ok";
  sendJson(res, 200, model);
}

/**
 * The OpenAI-compatible facade: `POST /v1/chat/completions` (streaming or
 * not), `GET /v1/chat/completions/{id}/stream` (resuming a resumable
 * stream) and `GET /v1/models[/{id}]`, on the same pipeline as the gRPC
 * service.
 */
export function createOpenAiFacade(options: OpenAiFacadeOptions): FacadeRoute {
  const store = options.replayStore ?? createMemoryReplayStore();
  return (req, res, exchange) => {
    const path = pathOf(req);
    if (!path.startsWith("/v1/")) return false;
    exchange.edge = "openai";
    if (path === "/v1/chat/completions" && req.method === "POST") {
      exchange.route = path;
      return chatCompletions(req, res, exchange, options, store);
    }
    if (path.startsWith("/v1/chat/completions/") && path.endsWith("/stream") && req.method === "GET") {
      exchange.route = "/v1/chat/completions/{id}/stream";
      // The id of its chunks (chatcmpl-resp_…) or of the stream (resp_…).
      const id = decodePathSegment(path.slice("/v1/chat/completions/".length, -"/stream".length))?.replace(/^chatcmpl-/, "");
      if (id === undefined) return sendError(res, exchange, new GatewayError("invalid_request", "path: malformed percent-escape in the response id", { field: "response_id" }));
      return resumeStream(req, res, exchange, options, id);
    }
    if (path === "/v1/models" && req.method === "GET") {
      exchange.route = path;
      return listModels(req, res, exchange, options);
    }
    if (path.startsWith("/v1/models/") && req.method === "GET") {
      exchange.route = "/v1/models/{id}";
      const id = decodePathSegment(path.slice("/v1/models/".length));
      if (id === undefined) return sendError(res, exchange, new GatewayError("invalid_request", "path: malformed percent-escape in the model id", { field: "model" }));
      return listModels(req, res, exchange, options, id);
    }
    exchange.route = "other";
    exchange.code = "not_found";
    sendJson(res, 404, {
      error: { message: `no route ${clipClientValue(req.method ?? "")} ${clipClientValue(path)}`, type: "invalid_request_error", param: null, code: "not_found" },
    });
  };
}
