import type { Priority } from "../admission/provider-gate.js";
import type { RouteTarget } from "../config/config.js";
import type { EmbedRequest } from "../core/embed-request.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import type { AttemptObserver } from "../flow/observer.js";
import type { EmbeddingAdapter, EmbeddingAnswer } from "../providers/embedding-adapter.js";
import type { UpstreamTarget } from "../providers/provider.js";
import { adapterFor } from "../providers/registry.js";
import type { UpstreamClient } from "../upstream/http-client.js";
import { phaseTimeout } from "../upstream/phase-timeout.js";
import { readErrorBody } from "../upstream/response-body.js";
import { fromTransportError } from "../upstream/transport-errors.js";
import { createPhaseTimer } from "./deadlines.js";

/**
 * The largest embeddings answer read from a provider. 2,048 vectors of
 * 1,536 numbers are about 60 MiB of JSON; past this the attempt fails
 * (`upstream_protocol`) rather than hold more for one caller.
 */
export const MAX_EMBEDDING_ANSWER_BYTES = 96 * 1024 * 1024;

export interface EmbedAttemptDeps {
  readonly client: UpstreamClient;
  /** Waits for room at the target's provider (its admission queue); resolves with the slot's release. */
  readonly admit: (target: RouteTarget, signal: AbortSignal, priority?: Priority) => Promise<() => void>;
}

/** One embedding exchange with one target: the retry loop's `Trial` (resilience/attempts.ts). */
export interface EmbedAttempt {
  readonly target: RouteTarget;
  readonly startedAt: number;
  first(): Promise<EmbeddingAnswer>;
  abort(reason: GatewayError): void;
}

/**
 * Sends one embedding request and reads the whole answer, under the same
 * phase limits as a stream's attempt (headers, then silence and total while
 * the body comes), in the provider's admission queue, and released on any
 * abort: the caller gone, a lost hedge, a timeout.
 */
export function startEmbedAttempt(
  request: EmbedRequest,
  target: RouteTarget,
  adapter: EmbeddingAdapter,
  context: { readonly requestId: string; readonly observer: AttemptObserver; readonly ended: (target: RouteTarget) => void; readonly priority?: Priority },
  deps: EmbedAttemptDeps,
  parent: AbortSignal,
): EmbedAttempt {
  const controller = new AbortController();
  const { signal } = controller;
  const abort = (reason: GatewayError) => {
    if (!signal.aborted) controller.abort(reason);
  };
  const onParentAbort = () => abort(toGatewayError(parent.reason));
  const startedAt = performance.now();
  const provider = target.provider;
  const upstreamTarget: UpstreamTarget = { provider, model: target.model };

  const run = async (): Promise<EmbeddingAnswer> => {
    if (parent.aborted) throw toGatewayError(parent.reason);
    parent.addEventListener("abort", onParentAbort, { once: true });
    let release: (() => void) | undefined;
    const timer = createPhaseTimer(target.timeouts, (phase) => abort(phaseTimeout(phase, provider.name, target.timeouts)));
    try {
      const unsigned = adapter.buildRequest(request, upstreamTarget);
      const built = adapter.authorize ? await adapter.authorize(unsigned, upstreamTarget, signal) : unsigned;
      release = await deps.admit(target, signal, context.priority);
      context.observer.admitted(performance.now() - startedAt);
      context.observer.sent?.();
      const response = await deps.client
        .send({ ...built, headers: { ...built.headers, ...context.observer.headers, "x-request-id": context.requestId } }, { signal, timeouts: target.timeouts, pool: provider.name, requestId: context.requestId })
        .catch((error: unknown) => {
          throw signal.aborted ? toGatewayError(signal.reason) : fromTransportError(error, { provider: provider.name, timeouts: target.timeouts, phase: "connect" });
        });
      timer.headers();
      timer.firstDelta();
      if (response.status < 200 || response.status > 299) {
        const body = await readErrorBody(response.body);
        throw adapterFor(provider.kind).errorFromResponse({ status: response.status, headers: response.headers, body }, upstreamTarget);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        timer.waiting();
        for await (const chunk of response.body as AsyncIterable<Buffer>) {
          timer.received();
          size += chunk.length;
          if (size > MAX_EMBEDDING_ANSWER_BYTES) throw new GatewayError("upstream_protocol", `provider ${provider.name} sent an embeddings answer over ${MAX_EMBEDDING_ANSWER_BYTES} bytes`, { provider: provider.name });
          chunks.push(chunk);
          timer.waiting();
        }
      } catch (error) {
        response.body.destroy();
        if (signal.aborted) throw toGatewayError(signal.reason);
        throw error instanceof GatewayError ? error : fromTransportError(error, { provider: provider.name, timeouts: target.timeouts, phase: "stream" });
      }
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks, size).toString("utf8"));
      } catch {
        throw new GatewayError("upstream_protocol", `provider ${provider.name} sent an embeddings answer that is not JSON`, { provider: provider.name });
      }
      const answer = adapter.readAnswer(body, request, upstreamTarget);
      context.observer.firstDelta();
      return answer;
    } catch (error) {
      throw signal.aborted ? toGatewayError(signal.reason) : toGatewayError(error);
    } finally {
      timer.stop();
      release?.();
      parent.removeEventListener("abort", onParentAbort);
      context.ended(target);
    }
  };

  let result: Promise<EmbeddingAnswer> | undefined;
  return {
    target,
    startedAt,
    first: () => (result ??= run()),
    abort,
  };
}
