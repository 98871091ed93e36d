import { randomUUID } from "node:crypto";
import type { ChatRequest } from "../core/chat-request.js";
import { quoteClientValue } from "../core/client-text.js";
import type { Delta } from "../core/delta.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import type { Config, ModelRoute } from "../config/config.js";
import type { Logger } from "../logging/logger.js";
import { createStreamLog } from "../logging/stream-log.js";
import { prepareRequest } from "../providers/param-policy.js";
import { adapterFor } from "../providers/registry.js";
import { createSseDecoder } from "../sse/decoder.js";
import type { UpstreamClient, UpstreamResponse } from "../upstream/http-client.js";
import { createPhaseTimer, type Phase } from "./phase-timer.js";
import type { StreamRegistry } from "./stream-registry.js";
import { fromTransportError } from "../upstream/transport-errors.js";

export interface StreamContext {
  /**
   * Aborted when the client leaves or its deadline passes. Its reason must be
   * a GatewayError (`canceled`, `deadline_exceeded`, `shutting_down`): the
   * edge decides what the abort means, the pipeline only obeys it.
   */
  readonly signal: AbortSignal;
  readonly requestId: string;
  /** Which edge the request came through, for logs. */
  readonly edge: string;
}

/** The path every request takes, whichever edge it came through. */
export interface ChatPipeline {
  readonly models: ReadonlyMap<string, ModelRoute>;
  /** Deltas for one request: start, content, usage, finish; or a GatewayError. */
  stream(request: ChatRequest, ctx: StreamContext): AsyncGenerator<Delta, void, undefined>;
}

export interface ChatPipelineOptions {
  readonly config: Config;
  readonly client: UpstreamClient;
  readonly logger: Logger;
  readonly registry: StreamRegistry;
}

const ERROR_BODY_LIMIT = 16 * 1024;

async function readErrorBody(body: UpstreamResponse["body"]): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= ERROR_BODY_LIMIT) break;
    }
  } catch {
    // A body that fails half-way still has a status worth reporting.
  } finally {
    body.destroy();
  }
  return Buffer.concat(chunks).toString("utf8").slice(0, ERROR_BODY_LIMIT);
}

function responseId(): string {
  return `resp_${randomUUID().replaceAll("-", "")}`;
}

/**
 * The reason given to the upstream request when the consumer stops early.
 * One shared instance: building an Error (and its stack) per stream showed
 * in profiles, and nobody ever reads this one.
 */
const CONSUMER_GONE = new GatewayError("canceled", "stream closed");

const PHASE_MESSAGE: Record<Phase, (provider: string, ms: number) => string> = {
  headers: (p, ms) => `headers timeout: provider ${p} sent no response headers within ${ms} ms`,
  first_token: (p, ms) => `first-token timeout: provider ${p} sent no content within ${ms} ms of its response headers`,
  idle: (p, ms) => `idle timeout: provider ${p} sent nothing for ${ms} ms`,
  total: (p, ms) => `total timeout: provider ${p} did not finish within ${ms} ms`,
};

function isEventStream(headers: UpstreamResponse["headers"]): boolean {
  const type = headers["content-type"];
  return typeof type === "string" && type.toLowerCase().startsWith("text/event-stream");
}

export function createChatPipeline(options: ChatPipelineOptions): ChatPipeline {
  const { config, client, logger, registry } = options;

  function route(alias: string): ModelRoute {
    const found = config.models.get(alias);
    if (!found) {
      throw new GatewayError("unknown_model", `unknown model ${quoteClientValue(alias)}: not configured on this gateway (see ListModels or GET /v1/models)`, { field: "model" });
    }
    return found;
  }

  async function* stream(request: ChatRequest, ctx: StreamContext): AsyncGenerator<Delta, void, undefined> {
    const target = route(request.model);
    const provider = target.provider;
    const adapter = adapterFor(provider.kind);
    const upstreamTarget = { provider, model: target.upstreamModel };
    const log = createStreamLog(logger, {
      requestId: ctx.requestId,
      edge: ctx.edge,
      alias: target.alias,
      provider: provider.name,
      model: target.upstreamModel,
    });

    // Cleanup hangs on abort signals, not on this generator's `finally`: a
    // consumer blocked on a slow client may never resume us, but a client
    // abort or a shutdown still destroys the upstream request and writes the
    // end log line.
    // The first cause wins: a phase timeout that fires while a slow client
    // holds the stream paused is logged as the timeout, not as the cancel
    // that may follow. Whatever ends the stream also frees its slot at once:
    // a generator blocked on a write to a vanished client never reaches its
    // `finally`.
    const upstream = new AbortController();
    let release: () => void = () => undefined;
    const stop = (reason: GatewayError) => {
      log.failed(reason);
      upstream.abort(reason);
      release();
    };
    try {
      release = registry.admit(stop);
    } catch (error) {
      log.failed(toGatewayError(error));
      throw error;
    }
    const onAbort = () => stop(toGatewayError(ctx.signal.reason));
    if (ctx.signal.aborted) onAbort();
    else ctx.signal.addEventListener("abort", onAbort, { once: true });

    const timer = createPhaseTimer(target.timeouts, (phase, ms) =>
      stop(new GatewayError("upstream_timeout", PHASE_MESSAGE[phase](provider.name, ms), { provider: provider.name })),
    );

    let phase: "connect" | "stream" = "connect";
    let completed = false;
    try {
      upstream.signal.throwIfAborted();
      // Contract-breadth hook (one per upstream attempt): what this target
      // cannot honour fails the request, or is dropped and reported on `start`.
      const prepared = prepareRequest(adapter, request, upstreamTarget, target.dropUnsupportedParams);
      const res = await client.send(adapter.buildRequest(prepared.request, upstreamTarget), {
        signal: upstream.signal,
        timeouts: target.timeouts,
        pool: provider.name,
        requestId: ctx.requestId,
      });
      phase = "stream";
      timer.headers();
      log.upstreamHeaders(res.status);
      if (res.status < 200 || res.status > 299) {
        throw adapter.errorFromResponse({ status: res.status, headers: res.headers, body: await readErrorBody(res.body) }, upstreamTarget);
      }
      if (!isEventStream(res.headers)) {
        res.body.destroy();
        throw new GatewayError("upstream_protocol", `provider ${provider.name} did not answer with an event stream`, { provider: provider.name });
      }

      const decoder = createSseDecoder({ maxEventSize: config.limits.maxEventBytes, source: provider.name });
      const translator = adapter.createTranslator(upstreamTarget, prepared.request);
      let started = false;
      const start: Delta = {
        type: "start",
        responseId: responseId(),
        provider: provider.name,
        model: target.upstreamModel,
        ...(prepared.droppedParams.length > 0 ? { droppedParams: prepared.droppedParams } : {}),
      };

      // Manual iteration: the idle clock must run only while we wait on
      // upstream, not while the consumer holds us at a yield.
      const chunks = (res.body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
      for (;;) {
        timer.waiting();
        const next = await chunks.next();
        timer.received();
        if (next.done) break;
        for (const event of decoder.push(next.value)) {
          for (const delta of translator.event(event)) {
            if (!started) {
              started = true;
              timer.firstDelta();
              yield start;
            }
            log.delta(delta);
            yield delta;
          }
        }
      }
      const tail = [...decoder.end().flatMap((event) => translator.event(event)), ...translator.end()];
      if (!started && tail.length > 0) yield start;
      for (const delta of tail) {
        log.delta(delta);
        yield delta;
      }
      completed = true;
      log.completed();
    } catch (error) {
      const failure = upstream.signal.aborted
        ? toGatewayError(upstream.signal.reason)
        : fromTransportError(error, { provider: provider.name, timeouts: target.timeouts, phase });
      log.failed(failure);
      throw failure;
    } finally {
      release();
      timer.stop();
      ctx.signal.removeEventListener("abort", onAbort);
      // A body read to its end needs no abort; an early exit (the consumer
      // returned, or an error) must destroy the upstream request.
      if (!completed) upstream.abort(CONSUMER_GONE);
    }
  }

  return { models: config.models, stream };
}
