import type { Priority } from "../admission/provider-gate.js";
import { randomUUID } from "node:crypto";
import type { Config, ModelRoute, RouteTarget } from "../config/config.js";
import type { ChatRequest } from "../core/chat-request.js";
import type { ContentDelta, Delta } from "../core/delta.js";
import { type DeltaSink, type Feed, type PulledStream, pullFrom } from "../core/delta-sink.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import type { Context } from "@opentelemetry/api";
import type { Telemetry } from "../telemetry/telemetry.js";
import type { Logger } from "../logging/logger.js";
import type { ProviderGates } from "../admission/provider-gate.js";
import type { Breakers } from "../resilience/circuit-breaker.js";
import { CONSUMER_GONE } from "../attempt/attempt.js";
import { type Committed, commitAttempt } from "../resilience/attempts.js";
import { type ModelInfo, type RouteTable, routeTableOf } from "../routing/route-table.js";
import type { TargetOrder } from "../routing/strategies.js";
import type { TargetStats } from "../routing/target-stats.js";
import type { UpstreamClient } from "../upstream/http-client.js";
import type { Quota } from "../store/tenant-store.js";
import type { Principal } from "../tenancy/principal.js";
import type { Tenancy } from "../tenancy/tenancy.js";
import { NO_CHARGE, type TenantCharge } from "../tenancy/tenant-charge.js";
import { checkTagValues } from "../tenancy/tags.js";
import { createUsageMeter } from "../usage/usage-meter.js";
import { costMicros } from "../usage/cost.js";
import type { CachePolicy } from "../core/cache-policy.js";
import type { CachedAnswer } from "../cache/cached-answer.js";
import { cacheHeaderValue, type ResponseCache, type StorePlan } from "../cache/response-cache.js";
import type { Recorder, RecordingPlan } from "../recording/recorder.js";
import type { StreamRegistry } from "./stream-registry.js";
import { NO_POLICY, policyFor } from "../compliance/pii-policy.js";
import { type Screened, screeningIsLong, screenRequest, screenRequestInSlices, unscreened } from "../compliance/screen-request.js";
import { feedAfter } from "./feed-after.js";
import { earlyUsage } from "./early-usage.js";
import { screenStage } from "./screen-stage.js";
import { routeByNeed } from "../routing/route-by-need.js";
import { createSummaryCache, SUMMARY_MAX_TOKENS } from "../routing/summarize-turns.js";
import { type ChatMessage, messageText } from "../core/chat-request.js";
import { createOutputGuard, type OutputCut, type OutputGuard, outputLimits } from "./output-guard.js";
import type { StreamCut } from "./stream-cut.js";
import { restoringSink } from "../compliance/restoring-sink.js";
import type { ComplianceDecision } from "../compliance/compliance-decision.js";

/** What the summarizer is told: keep what later turns may rely on, in few words. */
const SUMMARY_INSTRUCTIONS =
  "Summarise the conversation below for the assistant that continues it. Keep facts, names, numbers, decisions, open questions and what each tool call returned; leave out pleasantries. Write plain prose, at most a few paragraphs.";

/** Why the upstream of a cut answer was stopped (its attempt's outcome); the client sees finish `length`. */
const ANSWER_CUT = new GatewayError("canceled", "the answer passed what its request reserved; the gateway ended it");

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
  /** The client's deadline on the performance.now() clock: the budget for every attempt. */
  readonly deadlineAt?: number;
  /** A per-target rewrite of the request (the facade's thinking-signature replay). */
  readonly prepare?: (request: ChatRequest, target: RouteTarget) => Promise<ChatRequest>;
  /** The request's trace context (its server span): upstream attempts are its children. */
  readonly trace?: Context;
  /** The access line's fields: the stream's summary goes here when it ends. */
  readonly fields?: Record<string, unknown>;
  /** The key the edge authenticated; absent while authentication is off. */
  readonly principal?: Principal;
  /** The client's address, for the audit log's events about this call. */
  readonly remote?: string;
  /** Told what is left of the key's limits, before the first delta (or the refusal): the edge's response headers. */
  readonly onQuota?: (quota: Quota) => void;
  /** Cost-allocation tags for the usage record (tenancy/tags.ts). */
  readonly tags?: Readonly<Record<string, string>>;
  /** A batch line: admitted at each provider behind interactive calls, within batch.maxShare. */
  readonly background?: boolean;
  /** What the caller lets the response cache do (Cache-Control, gRPC cache_policy). */
  readonly cachePolicy?: CachePolicy;
  /** Told what the cache did (`sluice-cache`'s value, and a semantic hit's similarity) before the first delta: the edge's response headers. */
  readonly onCache?: (value: string, similarity?: number) => void;
  /** Told how the conversation was fitted to the context window (`truncated=K`) before the first delta: the `sluice-context` header. */
  readonly onContext?: (value: string) => void;
}

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
 * The stages between an edge and a provider, in order:
 * - tenancy, the key's allowlist (tenancy/tenant-charge.ts), before the
 *   alias is even looked up;
 * - admission: a slot in the stream registry (refused while draining),
 *   then the key's limits and budget in one store round trip;
 * - route plan: the alias's targets in the configuration current when the
 *   request starts, ordered by its strategy;
 * - attempts: retry, failover and hedging until one attempt produces its
 *   first delta (resilience/attempts.ts), each attempt waiting in its
 *   provider's queue (admission/provider-gate.ts);
 * - relay: the committed attempt's deltas, pulled one at a time as the edge
 *   writes them, after a `start` naming the target that serves.
 * Whatever ends the stream (the client, a phase timeout while the client
 * holds it paused, shutdown) logs the first cause, frees the slot, aborts
 * the upstream and settles the key's usage at once, without waiting for a
 * generator to resume. A provider that reports no usage gets an estimated
 * usage delta before `finish` (usage/usage-meter.ts).
 */
export function createChatPipeline(options: ChatPipelineOptions): ChatPipeline {
  const { registry } = options;
  const summaries = createSummaryCache();
  const routesOf = (config: Config): RouteTable => routeTableOf(config.models);
  const attemptDeps = {
    client: options.client,
    admit: (target: RouteTarget, signal: AbortSignal, priority?: Priority) => options.gates.gateFor(target.provider).acquire(signal, priority),
    breakers: options.breakers,
    stats: options.stats,
    random: options.random ?? Math.random,
  };

  function relay(asked: ChatRequest, ctx: StreamContext, sink: DeltaSink<Delta>): Feed {
    const config = options.config();
    const routes = routesOf(config);
    // Screened before telemetry sees it: a redacted prompt is the only one traces can capture.
    const policy = policyFor(config, ctx.principal, routes.has(asked.model) ? routes.lookup(asked.model) : undefined);
    if (policy === NO_POLICY) return relayScreened(config, routes, unscreened(asked), ctx, sink);
    // Megabytes of prompt are screened in slices, the event loop turning between them: other streams go on meanwhile.
    if (screeningIsLong(asked)) return feedAfter(screenRequestInSlices(asked, policy, ctx.signal), sink, (screened) => relayScreened(config, routes, screened, ctx, sink));
    return relayScreened(config, routes, screenRequest(asked, policy), ctx, sink);
  }

  function relayScreened(config: Config, routes: RouteTable, screened: Screened, ctx: StreamContext, sink: DeltaSink<Delta>): Feed {
    let request = screened.request;
    if (screened.vault) sink = restoringSink(sink, screened.vault);
    const observer = options.telemetry.stream({
      requestId: ctx.requestId,
      edge: ctx.edge,
      // Metrics and logs name configured aliases only: a client's free text would grow their label sets.
      alias: routes.has(request.model) ? request.model : "unknown",
      request,
      ...(ctx.trace ? { parent: ctx.trace } : {}),
      ...(ctx.fields ? { fields: ctx.fields } : {}),
      ...(screened.policy.keptLocal ? { withholdContent: true } : {}),
    });
    const meter = createUsageMeter(request);
    let charge: TenantCharge = NO_CHARGE;
    const controller = new AbortController();
    let release: () => void = () => undefined;
    let attemptFeed: Feed | undefined;
    let credit = true;
    let ended = false;
    /** Where a miss's answer is stored once it completed (aliases with a cache). */
    let storePlan: StorePlan | undefined;
    /** This call, kept for evaluation replay once it completed (aliases that record, when the draw keeps it). */
    let recording: RecordingPlan | undefined;
    let servedBy: RouteTarget | undefined;
    /** Counts the committed attempt's output against what the request reserved (output-guard.ts); none when nothing bounds it. */
    let guard: OutputGuard | undefined;
    let cut: OutputCut | undefined;

    /**
     * Whatever ends the stream, once: the upstream is aborted first (the
     * bookkeeping must not delay the close), then the stream's telemetry,
     * slot and usage are settled, and the sink hears the end.
     */
    const end = (failure?: GatewayError) => {
      if (ended) return;
      ended = true;
      ctx.signal.removeEventListener("abort", onAbort);
      if (failure) controller.abort(failure);
      observer.ended(failure);
      release();
      charge.end(meter, failure);
      sink.end(failure);
      if (!failure && storePlan && servedBy) {
        options.cache!.offer(route.alias, storePlan, { requestId: ctx.requestId, target: servedBy.key, provider: servedBy.provider.name, model: servedBy.model });
      }
      if (!failure && !cut && recording && servedBy) options.recorder!.offer(recording, servedBy);
    };
    const onAbort = () => end(toGatewayError(ctx.signal.reason));

    // The key's allowlist before the alias is looked up: a key learns nothing of aliases it may not use.
    let route: ModelRoute;
    try {
      if (ctx.tags) checkTagValues(ctx.tags);
      if (options.tenancy) charge = options.tenancy.charge(ctx.principal, { request, requestId: ctx.requestId, ...(ctx.onQuota ? { onQuota: ctx.onQuota } : {}), ...(ctx.tags ? { tags: ctx.tags } : {}), ...(ctx.remote ? { remote: ctx.remote } : {}) });
      route = routes.lookup(request.model);
      if (screened.policy !== NO_POLICY) route = screenStage(screened, route, ctx, charge, options.onCompliance);
      release = registry.admit(end);
    } catch (error) {
      const failure = toGatewayError(error);
      ended = true;
      observer.ended(failure);
      queueMicrotask(() => sink.end(failure));
      return { resume: () => undefined, cancel: () => undefined };
    }
    if (ctx.signal.aborted) queueMicrotask(onAbort);
    else ctx.signal.addEventListener("abort", onAbort, { once: true });

    const forward = (delta: Delta, more: boolean): boolean => {
      observer.delta(delta);
      if (storePlan && delta.type !== "start") storePlan.capture.observe(delta);
      if (recording) recording.capture.observe(delta);
      if (!sink.push(delta, more)) credit = false;
      return credit;
    };
    // A provider that reports no usage gets an estimate before `finish`; counting is async, so what follows waits behind it.
    let held: Array<{ readonly delta: ContentDelta; readonly more: boolean }> | undefined;
    let heldEnd: { readonly error?: GatewayError } | undefined;
    /** The answer passed what was reserved: the upstream stops now, what was delivered is counted, and the client gets `length`. */
    const cutAnswer = (passed: OutputCut): false => {
      cut = passed;
      held = [];
      controller.abort(ANSWER_CUT);
      options.onCut?.({ requestId: ctx.requestId, alias: route.alias, ...(ctx.principal ? { key: { id: ctx.principal.id, name: ctx.principal.name } } : {}), ...(ctx.remote ? { remote: ctx.remote } : {}), target: servedBy?.key ?? "", ...passed });
      if (ctx.fields) ctx.fields.cut = passed.reason;
      void meter.estimateIfMissing().then(
        (estimate) => {
          if (ended) return;
          if (estimate) forward(estimate, true);
          forward({ type: "finish", reason: "length" }, false);
          end();
        },
        (error: unknown) => end(toGatewayError(error)),
      );
      return false;
    };
    const content: DeltaSink<ContentDelta> = {
      push(delta, more) {
        if (ended) return false;
        if (held) {
          if (!cut) held.push({ delta, more });
          return false;
        }
        if (guard) {
          const passed = guard.tap(delta);
          if (passed) return cutAnswer(passed);
        }
        if (delta.type !== "finish" || !meter.missingUsage) {
          meter.observe(delta);
          return forward(delta, more);
        }
        held = [{ delta, more }];
        void meter.estimateIfMissing().then(
          (estimate) => {
            if (ended) return;
            if (estimate) forward(estimate, true);
            const queued = held!;
            held = undefined;
            for (const item of queued) {
              meter.observe(item.delta);
              forward(item.delta, item.more);
            }
            if (heldEnd) content.end(heldEnd.error);
            else if (credit) attemptFeed?.resume();
          },
          (error: unknown) => end(toGatewayError(error)),
        );
        return false;
      },
      end(error) {
        if (held) {
          heldEnd = error ? { error } : {};
          return;
        }
        end(error ? (controller.signal.aborted ? toGatewayError(controller.signal.reason) : error) : undefined);
      },
    };

    /** A hit: the stored answer pushed under the sink's credit, as an upstream's would be. */
    const replay = (answer: CachedAnswer, hit: { readonly kind: "exact" | "semantic"; readonly similarity?: number }) => {
      const target = route.targets.find((t) => t.key === answer.target);
      const savedMicros = costMicros(answer.usage, target?.price);
      if (options.cache!.settings.chargeHits) {
        if (target) charge.serving(target);
        charge.cached({ kind: hit.kind, savedMicros: 0 });
      } else {
        charge.cached({ kind: hit.kind, savedMicros });
        options.cache!.saved(route.alias, savedMicros);
      }
      const { deltas } = answer;
      const cache = { kind: hit.kind, requestId: answer.requestId, ...(hit.similarity === undefined ? {} : { similarity: hit.similarity }) };
      forward({ type: "start", responseId: responseId(), provider: answer.provider, model: answer.model, cache, ...(screened.vault ? { restored: true } : {}) }, deltas.length > 0);
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

    /** The cache's verdict before any attempt: a hit is replayed; a miss may be stored when it completes. */
    const consultCache = async (): Promise<boolean> => {
      const cached = route.cache;
      if (!cached || !options.cache || !screened.cacheRequest) {
        ctx.onCache?.("off");
        return false;
      }
      const lookup = await options.cache.lookup(screened.cacheRequest, { ...route, cache: cached }, ctx.principal, ctx.cachePolicy ?? "default", { requestId: ctx.requestId, signal: controller.signal });
      const value = cacheHeaderValue(lookup.result);
      ctx.onCache?.(value, lookup.similarity);
      if (ctx.fields) ctx.fields.cache = value;
      if (ended) return true;
      if (lookup.answer) {
        replay(lookup.answer, lookup.result === "hit_semantic" ? { kind: "semantic", ...(lookup.similarity === undefined ? {} : { similarity: lookup.similarity }) } : { kind: "exact" });
        return true;
      }
      storePlan = lookup.store;
      return false;
    };

    const run = async () => {
      let committed: Committed;
      try {
        const routed = await routeByNeed(request, route, {
          summarize: (turns) => summarizeTurns(turns, route.context?.summarizer ?? "", ctx, controller.signal),
          summaries,
          // A summary is the summarizer's, for one key (by id: a key created under a revoked key's name is another key): neither another key nor another summarizer reads it.
          scope: `${ctx.principal?.id ?? ""}\u0000${route.context?.summarizer ?? ""}`,
          onSummaryFailed: (error) => options.logger?.warn({ event: "context.summary_failed", requestId: ctx.requestId, alias: route.alias, error: toGatewayError(error).message }),
        });
        route = routed.route;
        request = routed.request;
        if (routed.context !== undefined) {
          ctx.onContext?.(routed.context);
          charge.fitted(routed.context);
          if (ctx.fields) ctx.fields.context = routed.context;
        }
        await charge.admit(route);
        if (await consultCache()) return;
        if (options.recorder && (route.record || route.shadow)) {
          recording = options.recorder.plan(
            route,
            { requestId: ctx.requestId, keptLocal: screened.policy.keptLocal || (screened.found !== undefined && !screened.vault), maxAnswerBytes: config.limits.maxAnswerBytes, ...(ctx.background ? { background: true } : {}), ...(ctx.principal ? { keyName: ctx.principal.name } : {}), ...(ctx.tags ? { tags: ctx.tags } : {}) },
            request,
          );
        }
        committed = await commitAttempt(
          {
            route,
            order: options.order.order(route),
            plan: {
              request,
              dropUnsupportedParams: route.dropUnsupportedParams,
              ...(route.hostedTools ? { hostedTools: route.hostedTools } : {}),
              requestId: ctx.requestId,
              maxEventBytes: config.limits.maxEventBytes,
              ...(ctx.prepare ? { prepare: ctx.prepare } : {}),
              ...(ctx.background ? { priority: "background" as const } : {}),
            },
            signal: controller.signal,
            observer,
            ...(ctx.deadlineAt === undefined ? {} : { deadlineAt: ctx.deadlineAt }),
          },
          attemptDeps,
        );
      } catch (error) {
        return end(controller.signal.aborted ? toGatewayError(controller.signal.reason) : toGatewayError(error));
      }
      const { attempt, first } = committed;
      if (ended) return attempt.abort(CONSUMER_GONE);
      observer.committed(committed.records);
      charge.serving(attempt.target);
      servedBy = attempt.target;
      // A cut stops its attempt on purpose: the answer ends as cut, not as failed.
      attempt.signal.addEventListener(
        "abort",
        () => {
          if (!cut) end(toGatewayError(attempt.signal.reason));
        },
        { once: true },
      );
      guard = createOutputGuard(outputLimits(request, attempt.target, charge.allowance()));

      const dropped = attempt.droppedParams();
      const inputUsage = earlyUsage(first);
      forward(
        {
          type: "start",
          responseId: responseId(),
          provider: attempt.target.provider.name,
          model: attempt.target.model,
          ...(dropped.length > 0 ? { droppedParams: dropped } : {}),
          ...(screened.vault ? { restored: true } : {}),
          ...(inputUsage ? { inputUsage } : {}),
        },
        !first.done,
      );
      if (first.done) return content.end();
      attemptFeed = attempt.pipe(content, !credit, inputUsage ? undefined : first.value);
    };
    void run();

    return {
      resume() {
        credit = true;
        if (!held) attemptFeed?.resume();
      },
      cancel: (reason) => end(reason),
    };
  }

  const stream = (request: ChatRequest, ctx: StreamContext): DeltaStream => pullFrom<Delta>((sink) => relay(request, ctx, sink), CONSUMER_GONE);

  /**
   * The summary of old turns (context.strategy summarize): a request to the
   * summarizer alias as the same key, so its limits, budget and usage record
   * count it like any other call, under the caller's signal and deadline.
   */
  async function summarizeTurns(turns: readonly ChatMessage[], alias: string, ctx: StreamContext, signal: AbortSignal): Promise<string> {
    const transcript = turns.map((m) => `${m.role}: ${[messageText(m), ...(m.toolCalls ?? []).map((c) => `[calls ${c.name} ${c.arguments}]`)].filter(Boolean).join(" ")}`).join("\n\n");
    const request: ChatRequest = {
      model: alias,
      messages: [
        { role: "system", content: [{ type: "text", text: SUMMARY_INSTRUCTIONS }] },
        { role: "user", content: [{ type: "text", text: transcript }] },
      ],
      tools: [],
      sampling: { stop: [], maxTokens: SUMMARY_MAX_TOKENS },
      metadata: { labels: {} },
    };
    let text = "";
    const context: StreamContext = { signal, requestId: `${ctx.requestId}.summary`, edge: "context", ...(ctx.principal ? { principal: ctx.principal } : {}), ...(ctx.deadlineAt === undefined ? {} : { deadlineAt: ctx.deadlineAt }) };
    for await (const delta of stream(request, context)) if (delta.type === "text") text += delta.text;
    if (text.trim() === "") throw new GatewayError("upstream_protocol", "the summarizer answered nothing");
    return text.trim();
  }

  return { catalog: () => routesOf(options.config()).catalog(), relay, stream };
}
