import type { RouteTarget } from "../config/config.js";
import type { ChatRequest } from "../core/chat-request.js";
import type { ContentDelta } from "../core/delta.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import type { OptionalParam } from "../core/request-params.js";
import { prepareRequest } from "../providers/param-policy.js";
import type { UpstreamTarget } from "../providers/provider.js";
import { adapterFor } from "../providers/registry.js";
import { createSseDecoder } from "../sse/decoder.js";
import { createChunkReader } from "../upstream/chunk-reader.js";
import type { UpstreamClient } from "../upstream/http-client.js";
import { isEventStream, readErrorBody } from "../upstream/response-body.js";
import { fromTransportError } from "../upstream/transport-errors.js";
import type { AttemptObserver } from "../flow/observer.js";
import { createPhaseTimer, phaseTimeout, type PhaseTimer } from "./deadlines.js";

/** What one attempt sends, and where. */
export interface AttemptPlan {
  readonly request: ChatRequest;
  readonly target: RouteTarget;
  readonly dropUnsupportedParams: boolean;
  readonly requestId: string;
  readonly maxEventBytes: number;
  /**
   * A rewrite of the request for this target only, e.g. the facade putting
   * back the thinking signatures this target issued: they verify nowhere else.
   */
  readonly prepare?: (request: ChatRequest, target: RouteTarget) => Promise<ChatRequest>;
  /** Reports admission and the first delta, and gives the trace headers to send. */
  readonly observer?: AttemptObserver;
}

export interface AttemptDeps {
  readonly client: UpstreamClient;
  /** Waits for room at the target's provider (its admission queue); resolves with the slot's release. */
  readonly admit: (target: RouteTarget, signal: AbortSignal) => Promise<() => void>;
  /** Called once when the attempt has let go of everything (completed, failed or aborted). */
  readonly ended?: (target: RouteTarget) => void;
}

/**
 * One upstream exchange: admission, send, status, decode, translate. Its
 * deltas are produced only as they are pulled, so a slow client slows the
 * upstream read. Everything it holds (the provider slot, the phase timers,
 * the upstream socket) is released on its signal's abort, not only in a
 * generator `finally` that a consumer blocked on a vanished client never
 * reaches.
 */
export interface Attempt {
  readonly target: RouteTarget;
  /** performance.now() when the attempt began (before admission). */
  readonly startedAt: number;
  /** Aborted when the attempt ends early: a phase timeout, a lost hedge, the client gone. The reason is the cause. */
  readonly signal: AbortSignal;
  readonly deltas: AsyncGenerator<ContentDelta, void, undefined>;
  /** Parameters dropped for this target; known once the request was built. */
  droppedParams(): readonly OptionalParam[];
  /**
   * How many deltas decoded from the current upstream read are still to be
   * pulled: the next pull gets one without waiting for the network. Edges
   * use it to send deltas that arrived together as one message.
   */
  buffered(): number;
  /** Ends the attempt now: the upstream request is destroyed. */
  abort(reason: GatewayError): void;
}

/**
 * The reason given to the upstream request when the consumer stops early.
 * One shared instance: building an Error (and its stack) per stream showed
 * in profiles, and nobody ever reads this one.
 */
export const CONSUMER_GONE = new GatewayError("canceled", "stream closed");

const NO_FAILURE: unique symbol = Symbol("no failure");

export function startAttempt(plan: AttemptPlan, deps: AttemptDeps, parent: AbortSignal): Attempt {
  const { target } = plan;
  const provider = target.provider;
  const adapter = adapterFor(provider.kind);
  const upstreamTarget: UpstreamTarget = { provider, model: target.model, ...(target.thinking ? { thinking: target.thinking } : {}) };
  const controller = new AbortController();
  const abort = (reason: GatewayError) => {
    if (!controller.signal.aborted) controller.abort(reason);
  };
  const onParentAbort = () => abort(toGatewayError(parent.reason));
  if (parent.aborted) onParentAbort();
  else parent.addEventListener("abort", onParentAbort, { once: true });

  let timer: PhaseTimer | undefined;
  let release: (() => void) | undefined;
  let dropped: readonly OptionalParam[] = [];
  let buffered = 0;
  let ended = false;
  const cleanup = () => {
    timer?.stop();
    release?.();
    if (ended) return;
    ended = true;
    parent.removeEventListener("abort", onParentAbort);
    deps.ended?.(target);
  };
  controller.signal.addEventListener("abort", cleanup, { once: true });

  async function* exchange(): AsyncGenerator<ContentDelta, void, undefined> {
    const signal = controller.signal;
    let phase: "connect" | "stream" = "connect";
    let completed = false;
    try {
      const queuedAt = performance.now();
      release = await deps.admit(target, signal);
      if (signal.aborted) release();
      signal.throwIfAborted();
      plan.observer?.admitted(performance.now() - queuedAt);
      const request = plan.prepare ? await plan.prepare(plan.request, target) : plan.request;
      const prepared = prepareRequest(adapter, request, upstreamTarget, plan.dropUnsupportedParams);
      dropped = prepared.droppedParams;
      timer = createPhaseTimer(target.timeouts, (expired) => abort(phaseTimeout(expired, provider.name, target.timeouts)));
      const built = adapter.buildRequest(prepared.request, upstreamTarget);
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
      if (!isEventStream(res.headers)) {
        res.body.destroy();
        throw new GatewayError("upstream_protocol", `provider ${provider.name} did not answer with an event stream`, { provider: provider.name });
      }
      const decoder = createSseDecoder({ maxEventSize: plan.maxEventBytes, source: provider.name });
      const translator = adapter.createTranslator(upstreamTarget, prepared.request);
      let first = true;
      // Manual iteration: the idle clock must run only while we wait on
      // upstream, not while the consumer holds us at a yield.
      const chunks = createChunkReader(res.body);
      for (;;) {
        timer.waiting();
        const chunk = await chunks.read();
        timer.received();
        if (chunk === null) break;
        if (parent.aborted) {
          // Bytes that were already on their way when the client left.
          plan.observer?.afterAbort(decoder.push(chunk).reduce((n, event) => n + translator.event(event).length, 0));
          throw toGatewayError(parent.reason);
        }
        // The whole read is translated before its first delta is handed on,
        // so that buffered() knows what is left of it. A translation failure
        // surfaces after the deltas before it, as when translating lazily.
        const ready: ContentDelta[] = [];
        let failure: unknown = NO_FAILURE;
        try {
          for (const event of decoder.push(chunk)) {
            for (const delta of translator.event(event)) ready.push(delta);
          }
        } catch (error) {
          failure = error;
        }
        for (let i = 0; i < ready.length; i++) {
          if (first) {
            first = false;
            timer.firstDelta();
            plan.observer?.firstDelta();
          }
          buffered = ready.length - 1 - i;
          yield ready[i]!;
        }
        buffered = 0;
        if (failure !== NO_FAILURE) throw failure;
      }
      for (const event of decoder.end()) yield* translator.event(event);
      yield* translator.end();
      completed = true;
    } catch (error) {
      const failure = signal.aborted ? toGatewayError(signal.reason) : fromTransportError(error, { provider: provider.name, timeouts: target.timeouts, phase });
      // The cause, for whoever watches this attempt's signal.
      abort(failure);
      throw failure;
    } finally {
      if (completed) cleanup();
      // A body read to its end needs no abort; an early exit (the consumer
      // returned, or an error) must destroy the upstream request.
      else abort(CONSUMER_GONE);
    }
  }

  return {
    target,
    startedAt: performance.now(),
    signal: controller.signal,
    deltas: exchange(),
    droppedParams: () => dropped,
    buffered: () => buffered,
    abort,
  };
}
