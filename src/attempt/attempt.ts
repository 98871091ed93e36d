import { finished, type Readable } from "node:stream";
import type { Priority } from "../admission/provider-gate.js";
import type { RouteTarget } from "../config/config.js";
import type { ChatRequest } from "../core/chat-request.js";
import type { ContentDelta } from "../core/delta.js";
import { type DeltaSink, type Feed, type PulledStream, pullFrom } from "../core/delta-sink.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import type { AttemptObserver } from "../flow/observer.js";
import type { HostedToolsPolicy } from "../providers/hosted-tools.js";
import { type DroppedParam, prepareRequest } from "../providers/param-policy.js";
import type { UpstreamTarget } from "../providers/provider.js";
import { adapterFor } from "../providers/registry.js";
import { createSseDecoder, type SseEvent } from "../sse/decoder.js";
import { readChunk } from "../upstream/chunk-reader.js";
import type { UpstreamClient } from "../upstream/http-client.js";
import { phaseTimeout } from "../upstream/phase-timeout.js";
import { isEventStream, readErrorBody } from "../upstream/response-body.js";
import { fromTransportError } from "../upstream/transport-errors.js";
import { createPhaseTimer, type PhaseTimer } from "./deadlines.js";

/** What one attempt sends, and where. */
export interface AttemptPlan {
  readonly request: ChatRequest;
  readonly target: RouteTarget;
  readonly dropUnsupportedParams: boolean;
  /** The alias's `hostedTools`: a hosted tool a target cannot run is dropped (`offer`, the default) or fails the request. */
  readonly hostedTools?: HostedToolsPolicy;
  readonly requestId: string;
  readonly maxEventBytes: number;
  /**
   * A rewrite of the request for this target only, e.g. the facade putting
   * back the thinking signatures this target issued: they verify nowhere else.
   */
  readonly prepare?: (request: ChatRequest, target: RouteTarget) => Promise<ChatRequest>;
  /** Reports admission and the first delta, and gives the trace headers to send. */
  readonly observer?: AttemptObserver;
  /** Where it queues at the provider's gate: a batch line goes behind interactive calls. */
  readonly priority?: Priority;
}

export interface AttemptDeps {
  readonly client: UpstreamClient;
  /** Waits for room at the target's provider (its admission queue); resolves with the slot's release. */
  readonly admit: (target: RouteTarget, signal: AbortSignal, priority?: Priority) => Promise<() => void>;
  /** Called once when the attempt has let go of everything (completed, failed or aborted). */
  readonly ended?: (target: RouteTarget) => void;
}

/**
 * One upstream exchange: admission, send, status, decode, translate. It
 * reads upstream only while its consumer grants credit (core/delta-sink.ts),
 * so a slow client slows the upstream read. Everything it holds (the
 * provider slot, the phase timers, the upstream socket) is released on its
 * signal's abort, whatever its consumer is doing.
 */
export interface Attempt {
  readonly target: RouteTarget;
  /** performance.now() when the attempt began (before admission). */
  readonly startedAt: number;
  /** Aborted when the attempt ends early: a phase timeout, a lost hedge, the client gone. The reason is the cause. */
  readonly signal: AbortSignal;
  /**
   * Starts the exchange and settles with its first delta (what commits a
   * request to this attempt), or its end without one, or its failure.
   * Called once.
   */
  first(): Promise<IteratorResult<ContentDelta, void>>;
  /**
   * The deltas after the first, pushed into `sink`: those decoded with the
   * first at once, then each upstream read as it arrives, while the sink
   * grants credit. `paused`: the sink has none yet. `lead`: the first
   * delta, handed back to go out with those decoded beside it (so `more`
   * says so). After `first`, once.
   */
  pipe(sink: DeltaSink<ContentDelta>, paused?: boolean, lead?: ContentDelta): Feed;
  /** Parameters dropped for this target; known once the request was built. */
  droppedParams(): readonly DroppedParam[];
  /** Ends the attempt now: the upstream request is destroyed. */
  abort(reason: GatewayError): void;
}

/**
 * The reason given to the upstream request when the consumer stops early.
 * One shared instance: building an Error (and its stack) per stream showed
 * in profiles, and nobody ever reads this one.
 */
export const CONSUMER_GONE = new GatewayError("canceled", "stream closed");

/** An attempt's deltas, first included, pulled (tests; consumers that fold a whole answer). */
export function attemptDeltas(attempt: Attempt): PulledStream<ContentDelta> {
  return pullFrom<ContentDelta>((sink) => {
    let feed: Feed | undefined;
    let canceled: GatewayError | undefined;
    attempt.first().then(
      (first) => {
        if (canceled) return;
        if (first.done) return sink.end();
        feed = attempt.pipe(sink, false, first.value);
      },
      (error: unknown) => sink.end(toGatewayError(error)),
    );
    return {
      resume: () => feed?.resume(),
      cancel: (reason) => {
        canceled = reason;
        attempt.abort(reason);
        sink.end(reason);
      },
    };
  }, CONSUMER_GONE);
}

export function startAttempt(plan: AttemptPlan, deps: AttemptDeps, parent: AbortSignal): Attempt {
  const { target } = plan;
  const provider = target.provider;
  const adapter = adapterFor(provider.kind);
  const upstreamTarget: UpstreamTarget = { provider, model: target.model, ...(target.thinking ? { thinking: target.thinking } : {}), ...(target.promptCache ? { promptCache: target.promptCache } : {}) };
  const controller = new AbortController();
  const signal = controller.signal;
  const abort = (reason: GatewayError) => {
    if (!signal.aborted) controller.abort(reason);
  };
  const onParentAbort = () => abort(toGatewayError(parent.reason));

  let timer: PhaseTimer | undefined;
  let release: (() => void) | undefined;
  let dropped: readonly DroppedParam[] = [];
  let released = false;
  const cleanup = () => {
    timer?.stop();
    release?.();
    if (released) return;
    released = true;
    parent.removeEventListener("abort", onParentAbort);
    deps.ended?.(target);
  };

  // The exchange's state, driven by the body's events and the sink's credit.
  let phase: "connect" | "stream" = "connect";
  let body: Readable | undefined;
  let decode: ((chunk: Uint8Array) => ContentDelta[]) | undefined;
  let finishDecoding: (() => ContentDelta[]) | undefined;
  /** undefined while the body is open, null once it ended, the error once it failed. */
  let bodyOutcome: Error | null | undefined;
  let sink: DeltaSink<ContentDelta> | undefined;
  let firstSettle: { resolve(result: IteratorResult<ContentDelta, void>): void; reject(error: unknown): void } | undefined;
  let firstSeen = false;
  /** Deltas decoded with the first, before pipe(). */
  let early: ContentDelta[] = [];
  /** How the exchange ended before pipe() (after the first delta): told to the sink after `early`. */
  let heldEnd: { error?: GatewayError } | undefined;
  let paused = true;
  let pumping = false;
  let waiting = false;
  let done = false;

  const finish = (error?: GatewayError) => {
    if (done) return;
    done = true;
    if (!error) cleanup();
    else abort(error);
    if (sink) return sink.end(error);
    if (firstSettle) {
      const settle = firstSettle;
      firstSettle = undefined;
      if (error) settle.reject(error);
      else settle.resolve({ value: undefined, done: true });
      return;
    }
    heldEnd = error ? { error } : {};
  };
  const fail = (error: unknown) => {
    finish(signal.aborted ? toGatewayError(signal.reason) : fromTransportError(error, { provider: provider.name, timeouts: target.timeouts, phase }));
  };
  signal.addEventListener(
    "abort",
    () => {
      cleanup();
      finish(toGatewayError(signal.reason));
    },
    { once: true },
  );
  if (parent.aborted) onParentAbort();
  else parent.addEventListener("abort", onParentAbort, { once: true });

  /** Hands decoded deltas on: all of them (they are decoded already); credit decides only whether to read again. */
  const deliver = (ready: readonly ContentDelta[]) => {
    for (let i = 0; i < ready.length; i++) {
      const delta = ready[i]!;
      if (!firstSeen) {
        firstSeen = true;
        timer?.firstDelta();
        plan.observer?.firstDelta();
      }
      if (sink) {
        if (!sink.push(delta, i < ready.length - 1)) paused = true;
      } else if (firstSettle) {
        const settle = firstSettle;
        firstSettle = undefined;
        // Nothing more is read until pipe(): the request may yet commit to another attempt.
        paused = true;
        settle.resolve({ value: delta, done: false });
      } else early.push(delta);
    }
  };

  /** One upstream read: translated whole before its first delta is handed on; a failure surfaces after the deltas before it. */
  const take = (chunk: Uint8Array) => {
    if (parent.aborted) {
      // Bytes that were already on their way when the client left.
      let late = 0;
      try {
        late = decode!(chunk).length;
      } catch {
        // Nobody is left to tell.
      }
      plan.observer?.afterAbort(late);
      return finish(toGatewayError(parent.reason));
    }
    let ready: ContentDelta[];
    try {
      ready = decode!(chunk);
    } catch (error) {
      deliver((error as { partial?: ContentDelta[] }).partial ?? []);
      return fail((error as { cause?: unknown }).cause ?? error);
    }
    deliver(ready);
  };

  const endOfBody = () => {
    let tail: ContentDelta[];
    try {
      tail = finishDecoding!();
    } catch (error) {
      deliver((error as { partial?: ContentDelta[] }).partial ?? []);
      return fail((error as { cause?: unknown }).cause ?? error);
    }
    deliver(tail);
    finish();
  };

  /** Reads while there is credit and the body has bytes; otherwise waits for the body's `readable` or the sink's resume(). */
  const pump = () => {
    if (pumping || !body) return;
    pumping = true;
    try {
      while (!paused && !done) {
        const chunk = readChunk(body);
        if (chunk === null) {
          if (bodyOutcome === undefined) {
            if (!waiting) {
              waiting = true;
              timer?.waiting();
            }
            return;
          }
          if (bodyOutcome === null) return endOfBody();
          return fail(bodyOutcome);
        }
        if (waiting) {
          waiting = false;
          timer?.received();
        }
        take(chunk);
      }
    } catch (error) {
      fail(error);
    } finally {
      pumping = false;
    }
  };

  async function exchange(): Promise<void> {
    try {
      const queuedAt = performance.now();
      release = await deps.admit(target, signal, plan.priority);
      if (signal.aborted) release();
      signal.throwIfAborted();
      plan.observer?.admitted(performance.now() - queuedAt);
      const request = plan.prepare ? await plan.prepare(plan.request, target) : plan.request;
      const prepared = prepareRequest(adapter, request, upstreamTarget, plan.dropUnsupportedParams, plan.hostedTools);
      dropped = prepared.droppedParams;
      timer = createPhaseTimer(target.timeouts, (expired) => abort(phaseTimeout(expired, provider.name, target.timeouts)));
      const unsigned = adapter.buildRequest(prepared.request, upstreamTarget);
      const built = adapter.authorize ? await adapter.authorize(unsigned, upstreamTarget, signal) : unsigned;
      plan.observer?.sent?.();
      const res = await deps.client.send(plan.observer ? { ...built, headers: { ...built.headers, ...plan.observer.headers } } : built, {
        signal,
        timeouts: target.timeouts,
        pool: provider.name,
        requestId: plan.requestId,
      });
      phase = "stream";
      timer.headers();
      if (res.status < 200 || res.status > 299) {
        throw adapter.errorFromResponse({ status: res.status, headers: res.headers, body: await readErrorBody(res.body) }, upstreamTarget);
      }
      if (!(adapter.framing ? adapter.framing.accepts(res.headers) : isEventStream(res.headers))) {
        res.body.destroy();
        throw new GatewayError("upstream_protocol", `provider ${provider.name} did not answer with an event stream`, { provider: provider.name });
      }
      const decoderOptions = { maxEventSize: plan.maxEventBytes, source: provider.name };
      const decoder = adapter.framing ? adapter.framing.createDecoder(decoderOptions) : createSseDecoder(decoderOptions);
      const translator = adapter.createTranslator(upstreamTarget, prepared.request);
      decode = (chunk) => translateAll(decoder.push(chunk), translator);
      finishDecoding = () => {
        const tail = translateAll(decoder.end(), translator);
        try {
          for (const delta of translator.end()) tail.push(delta);
        } catch (error) {
          throw partialFailure(tail, error);
        }
        return tail;
      };
      const readable = res.body;
      body = readable;
      readable.on("readable", pump);
      finished(readable, { writable: false }, (error) => {
        bodyOutcome = error ?? null;
        pump();
      });
      if (signal.aborted) return;
      paused = false;
      pump();
    } catch (error) {
      fail(error);
    }
  }

  const feed: Feed = {
    resume() {
      if (done || !paused) return;
      paused = false;
      pump();
    },
    cancel: (reason) => abort(reason),
  };

  return {
    target,
    startedAt: performance.now(),
    signal,
    first() {
      if (done) return heldEnd?.error ? Promise.reject(heldEnd.error) : Promise.resolve({ value: undefined, done: true });
      return new Promise<IteratorResult<ContentDelta, void>>((resolve, reject) => {
        firstSettle = { resolve, reject };
        void exchange();
      });
    },
    pipe(to, startPaused = false, lead) {
      sink = to;
      const held = lead ? [lead, ...early] : early;
      early = [];
      let credit = true;
      for (let i = 0; i < held.length; i++) if (!to.push(held[i]!, i < held.length - 1)) credit = false;
      if (heldEnd) {
        to.end(heldEnd.error);
        return feed;
      }
      paused = startPaused || !credit;
      pump();
      return feed;
    },
    droppedParams: () => dropped,
    abort,
  };
}

/** A translation failure after some deltas of the same read: those are still the client's. */
function partialFailure(partial: ContentDelta[], cause: unknown): { partial: ContentDelta[]; cause: unknown } {
  return { partial, cause };
}

/** Every event of one read translated, in order; a failure carries the deltas before it. */
function translateAll(events: Iterable<SseEvent>, translator: { event(event: SseEvent): readonly ContentDelta[] }): ContentDelta[] {
  const ready: ContentDelta[] = [];
  try {
    for (const event of events) {
      const deltas = translator.event(event);
      for (let i = 0; i < deltas.length; i++) ready.push(deltas[i]!);
    }
  } catch (error) {
    throw partialFailure(ready, error);
  }
  return ready;
}
