import { randomUUID } from "node:crypto";
import type { Priority, ProviderGates } from "../admission/provider-gate.js";
import { CONSUMER_GONE } from "../attempt/attempt.js";
import type { ResponseCache } from "../cache/response-cache.js";
import type { ComplianceDecision } from "../compliance/compliance-decision.js";
import { unscreened } from "../compliance/screen-request.js";
import type { Config, RouteTarget } from "../config/config.js";
import { createCallSummary } from "../core/call-summary.js";
import type { ChatRequest } from "../core/chat-request.js";
import type { ContentDelta, Delta } from "../core/delta.js";
import { type DeltaSink, type Feed, type PulledStream, pullFrom } from "../core/delta-sink.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import type { Logger } from "../logging/logger.js";
import type { Recorder } from "../recording/recorder.js";
import { type Committed, commitAttempt } from "../resilience/attempts.js";
import type { Breakers } from "../resilience/circuit-breaker.js";
import { type ModelInfo, type RouteTable, routeTableOf } from "../routing/route-table.js";
import type { TargetOrder } from "../routing/strategies.js";
import type { TargetStats } from "../routing/target-stats.js";
import type { Telemetry } from "../telemetry/telemetry.js";
import type { Tenancy } from "../tenancy/tenancy.js";
import { NO_CHARGE } from "../tenancy/tenant-charge.js";
import type { UpstreamClient } from "../upstream/http-client.js";
import { createUsageMeter } from "../usage/usage-meter.js";
import { answerPath } from "./answer-path.js";
import { earlyUsage } from "./early-usage.js";
import { endCall, openCall, openStages } from "./open-stages.js";
import { QUIET_OBSERVER } from "./quiet-observer.js";
import type { Answer, CallState, Stop } from "./stage.js";
import { chatStages } from "./stages/index.js";
import type { StreamContext } from "./stream-context.js";
import type { StreamCut } from "./stream-cut.js";
import type { StreamRegistry } from "./stream-registry.js";

export type { StreamContext } from "./stream-context.js";

/** Why the upstream of a cut answer was stopped (its attempt's outcome); the client sees finish `length`. */
const ANSWER_CUT = new GatewayError("canceled", "the answer passed what its request reserved; the gateway ended it");

/**
 * One request's deltas, pulled one at a time, and how many of the next ones
 * are already decoded (the rest of the upstream read the last one came
 * from): pulling those waits for no I/O.
 */
export type DeltaStream = PulledStream<Delta>;

/** The path every request takes, whichever edge it came through. */
export interface ChatPipeline {
  /** The aliases clients may name. */
  catalog(): readonly ModelInfo[];
  /**
   * Deltas for one request pushed into `sink` (start, content, usage,
   * finish), then its end (a GatewayError on failure), under the sink's
   * credit. The way edges write a stream: nothing stands between the
   * upstream read and the edge's writer per delta.
   */
  relay(request: ChatRequest, ctx: StreamContext, sink: DeltaSink<Delta>): Feed;
  /** The same deltas, pulled (consumers that fold a whole answer; the resumable store). */
  stream(request: ChatRequest, ctx: StreamContext): DeltaStream;
}

export interface ChatPipelineOptions {
  /**
   * The configuration current now (LiveConfig.current). Read once when a
   * request starts: its route, targets, providers and limits stay those for
   * the whole stream, retries and failover included, whatever a reload does.
   */
  readonly config: () => Config;
  readonly client: UpstreamClient;
  readonly telemetry: Telemetry;
  readonly registry: StreamRegistry;
  readonly gates: ProviderGates;
  readonly breakers: Breakers;
  readonly stats: TargetStats;
  readonly order: TargetOrder;
  readonly random?: () => number;
  /** Keys, limits and budgets; without it every request is anonymous. */
  readonly tenancy?: Pick<Tenancy, "charge">;
  /** The response cache, for aliases that have one. */
  readonly cache?: ResponseCache;
  /** For what goes wrong off a request's own path (a failed summary). */
  readonly logger?: Logger;
  /** Told of every compliance decision (a block, a redaction, local-only routing): the audit log. */
  readonly onCompliance?: (decision: ComplianceDecision) => void;
  /** Keeps a sample of completed calls of aliases that record (evaluation replay). */
  readonly recorder?: Recorder;
  /** Told of every answer the gateway cut because it passed its max_tokens or its key's budget (stream-cut.ts). */
  readonly onCut?: (cut: StreamCut) => void;
}

function responseId(): string {
  return `resp_${randomUUID().replaceAll("-", "")}`;
}

/**
 * The path every request takes, whichever edge it came through: the
 * stages in their table's order (stages/index.ts: screening, telemetry,
 * the key's allowlist, the route, compliance, a stream slot, the alias's
 * system prompt, the context fit, the charge, the cache, recording, the
 * answer's limits, usage), then
 * attempts (retry, failover and hedging until one produces its first
 * delta: resilience/attempts.ts), then the relay: the committed attempt's
 * deltas pushed into the edge's sink under its credit, each shown to the
 * stages' taps on the way. Whatever ends the call (the client, a phase
 * timeout while the client holds it paused, shutdown, a stage's refusal)
 * aborts the upstream first, then ends every stage's part in reverse
 * order (telemetry, the key's settle, the cache's and recorder's offers),
 * then the sink hears the end, once.
 */
export function createChatPipeline(options: ChatPipelineOptions): ChatPipeline {
  const routesOf = (config: Config): RouteTable => routeTableOf(config.models);
  const attemptDeps = {
    client: options.client,
    admit: (target: RouteTarget, signal: AbortSignal, priority?: Priority) => options.gates.gateFor(target.provider).acquire(signal, priority),
    breakers: options.breakers,
    stats: options.stats,
    random: options.random ?? Math.random,
  };
  const stages = chatStages({
    telemetry: options.telemetry,
    registry: options.registry,
    subcall: (request, ctx) => stream(request, ctx),
    ...(options.tenancy ? { tenancy: options.tenancy } : {}),
    ...(options.cache ? { cache: options.cache } : {}),
    ...(options.recorder ? { recorder: options.recorder } : {}),
    ...(options.onCompliance ? { onCompliance: options.onCompliance } : {}),
    ...(options.onCut ? { onCut: options.onCut } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
  });
  const reportEndFailure = (error: unknown) => options.logger?.error({ event: "stage.end_failed", error: toGatewayError(error).message });

  function relay(asked: ChatRequest, ctx: StreamContext, sink: DeltaSink<Delta>): Feed {
    const config = options.config();
    const controller = new AbortController();
    // The request is read when the meter counts (an estimate): by then the stages have made it what was sent.
    const meter = createUsageMeter(() => call.request);
    const call: CallState = {
      config,
      routes: routesOf(config),
      ctx,
      summary: ctx.summary ?? createCallSummary(),
      operation: "chat",
      signal: controller.signal,
      meter,
      stop: (reason) => end(reason),
      request: asked,
      route: undefined,
      charge: NO_CHARGE,
      observer: QUIET_OBSERVER,
      screened: unscreened(asked),
      cacheRequest: asked,
      restored: false,
      servedBy: undefined,
      cut: undefined,
    };
    const open = openCall();
    let out = sink;
    const taps: Array<(delta: Delta) => void> = [];
    const guards: Array<(delta: ContentDelta) => Stop | undefined> = [];
    let attemptFeed: Feed | undefined;
    let credit = true;
    let ended = false;

    /**
     * Whatever ends the call, once: the upstream is aborted first (the
     * bookkeeping must not delay the close), then the stages' parts end in
     * reverse order, then the sink hears the end.
     */
    const end = (failure?: GatewayError) => {
      if (ended) return;
      ended = true;
      ctx.signal.removeEventListener("abort", onAbort);
      if (failure) controller.abort(failure);
      endCall(open, failure ? { failure } : call.cut ? { cut: call.cut } : {}, reportEndFailure);
      out.end(failure);
    };
    const onAbort = () => end(toGatewayError(ctx.signal.reason));
    const failed = (error: unknown) => end(controller.signal.aborted ? toGatewayError(controller.signal.reason) : toGatewayError(error));

    const forward = (delta: Delta, more: boolean): boolean => {
      for (const tap of taps) tap(delta);
      if (!out.push(delta, more)) credit = false;
      return credit;
    };
    const { content, holding } = answerPath({
      parts: open.parts,
      guards,
      meter,
      forward,
      ended: () => ended,
      end,
      fail: failed,
      stopUpstream: (stop) => {
        call.cut = stop;
        controller.abort(ANSWER_CUT);
      },
      resume: () => {
        if (credit) attemptFeed?.resume();
      },
    });

    /** A stage's answer (a cache hit), pushed under the sink's credit as an upstream's would be. */
    const replay = (answer: Answer) => {
      const { deltas } = answer;
      forward({ type: "start", responseId: responseId(), ...answer.start, ...(call.restored ? { restored: true } : {}) }, deltas.length > 0);
      let next = 0;
      const pump = () => {
        while (next < deltas.length && !ended) {
          const delta = deltas[next++]!;
          meter.observe(delta);
          if (!forward(delta, next < deltas.length)) return;
        }
        if (next >= deltas.length) content.end();
      };
      attemptFeed = { resume: pump, cancel: () => undefined };
      if (credit) pump();
    };

    const run = async () => {
      let committed: Committed;
      try {
        const opening = openStages(stages, call, open);
        const answer = opening instanceof Promise ? await opening : opening;
        if (ended) return;
        for (const part of open.parts) {
          if (part.tap) taps.push(part.tap);
          if (part.wrap) out = part.wrap(out);
        }
        if (answer) return replay(answer);
        const route = call.route!;
        committed = await commitAttempt(
          {
            route,
            order: options.order.order(route),
            plan: {
              request: call.request,
              dropUnsupportedParams: route.dropUnsupportedParams,
              ...(route.hostedTools ? { hostedTools: route.hostedTools } : {}),
              requestId: ctx.requestId,
              maxEventBytes: config.limits.maxEventBytes,
              ...(ctx.prepare ? { prepare: ctx.prepare } : {}),
              ...(ctx.background ? { priority: "background" as const } : {}),
            },
            signal: controller.signal,
            observer: call.observer,
            ...(ctx.deadlineAt === undefined ? {} : { deadlineAt: ctx.deadlineAt }),
          },
          attemptDeps,
        );
      } catch (error) {
        return failed(error);
      }
      const { attempt, first } = committed;
      if (ended) return attempt.abort(CONSUMER_GONE);
      call.observer.committed(committed.records);
      call.charge.serving(attempt.target);
      call.servedBy = attempt.target;
      // A cut stops its attempt on purpose: the answer ends as cut, not as failed.
      attempt.signal.addEventListener(
        "abort",
        () => {
          if (!call.cut) end(toGatewayError(attempt.signal.reason));
        },
        { once: true },
      );
      for (const part of open.parts) {
        const guard = part.guard?.(attempt.target);
        if (guard) guards.push(guard);
      }

      const dropped = attempt.droppedParams();
      const inputUsage = earlyUsage(first);
      forward(
        {
          type: "start",
          responseId: responseId(),
          provider: attempt.target.provider.name,
          model: attempt.target.model,
          ...(dropped.length > 0 ? { droppedParams: dropped } : {}),
          ...(call.restored ? { restored: true } : {}),
          ...(inputUsage ? { inputUsage } : {}),
        },
        !first.done,
      );
      if (first.done) return content.end();
      attemptFeed = attempt.pipe(content, !credit, inputUsage ? undefined : first.value);
    };
    if (ctx.signal.aborted) queueMicrotask(onAbort);
    else ctx.signal.addEventListener("abort", onAbort, { once: true });
    // Started after this returns: a refusal reaches a sink whose feed the caller already holds.
    queueMicrotask(() => void run());

    return {
      resume() {
        credit = true;
        if (!holding()) attemptFeed?.resume();
      },
      cancel: (reason) => end(reason),
    };
  }

  const stream = (request: ChatRequest, ctx: StreamContext): DeltaStream => pullFrom<Delta>((sink) => relay(request, ctx, sink), CONSUMER_GONE);

  return { catalog: () => routesOf(options.config()).catalog(), relay, stream };
}
