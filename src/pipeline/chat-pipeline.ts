import { randomUUID } from "node:crypto";
import type { Config, ModelRoute, RouteTarget } from "../config/config.js";
import type { ChatRequest } from "../core/chat-request.js";
import type { Delta } from "../core/delta.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import type { Context } from "@opentelemetry/api";
import type { Telemetry } from "../telemetry/telemetry.js";
import type { ProviderGates } from "../admission/provider-gate.js";
import type { Breakers } from "../resilience/circuit-breaker.js";
import { type Attempt, CONSUMER_GONE } from "../attempt/attempt.js";
import { commitAttempt } from "../resilience/attempts.js";
import { createRouteTable, type ModelInfo, type RouteTable } from "../routing/route-table.js";
import type { TargetOrder } from "../routing/strategies.js";
import type { TargetStats } from "../routing/target-stats.js";
import type { UpstreamClient } from "../upstream/http-client.js";
import type { Quota } from "../store/tenant-store.js";
import type { Principal } from "../tenancy/principal.js";
import type { Tenancy } from "../tenancy/tenancy.js";
import { NO_CHARGE, type TenantCharge } from "../tenancy/tenant-charge.js";
import { createUsageMeter } from "../usage/usage-meter.js";
import type { StreamRegistry } from "./stream-registry.js";

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
  /** Told what is left of the key's limits, before the first delta (or the refusal): the edge's response headers. */
  readonly onQuota?: (quota: Quota) => void;
}

/**
 * One request's deltas, pulled one at a time, and how many of the next ones
 * are already decoded (the rest of the upstream read the last one came
 * from): pulling those waits for no I/O.
 */
export interface DeltaStream extends AsyncGenerator<Delta, void, undefined> {
  buffered(): number;
}

/** The path every request takes, whichever edge it came through. */
export interface ChatPipeline {
  /** The aliases clients may name. */
  catalog(): readonly ModelInfo[];
  /** Deltas for one request: start, content, usage, finish; or a GatewayError. */
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
  // One route table per configuration, made when it is first used.
  const tables = new WeakMap<Config, RouteTable>();
  const routesOf = (config: Config): RouteTable => {
    let table = tables.get(config);
    if (!table) {
      table = createRouteTable(config.models);
      tables.set(config, table);
    }
    return table;
  };
  const attemptDeps = {
    client: options.client,
    admit: (target: RouteTarget, signal: AbortSignal) => options.gates.gateFor(target.provider).acquire(signal),
    breakers: options.breakers,
    stats: options.stats,
    random: options.random ?? Math.random,
  };

  function stream(request: ChatRequest, ctx: StreamContext): DeltaStream {
    let serving: Attempt | undefined;
    return Object.assign(relay(request, ctx, (attempt) => (serving = attempt)), { buffered: () => serving?.buffered() ?? 0 });
  }

  async function* relay(request: ChatRequest, ctx: StreamContext, serve: (attempt: Attempt) => void): AsyncGenerator<Delta, void, undefined> {
    const config = options.config();
    const routes = routesOf(config);
    const observer = options.telemetry.stream({
      requestId: ctx.requestId,
      edge: ctx.edge,
      // Metrics and logs name configured aliases only: a client's free text would grow their label sets.
      alias: routes.has(request.model) ? request.model : "unknown",
      request,
      ...(ctx.trace ? { parent: ctx.trace } : {}),
      ...(ctx.fields ? { fields: ctx.fields } : {}),
    });
    const meter = createUsageMeter(request);
    let charge: TenantCharge = NO_CHARGE;

    // Admission.
    const controller = new AbortController();
    let release: () => void = () => undefined;
    // The upstream is aborted first: the bookkeeping (spans, metrics, usage) must not delay the close.
    const stop = (reason: GatewayError) => {
      controller.abort(reason);
      observer.ended(reason);
      release();
      charge.end(meter, reason);
    };
    let route: ModelRoute;
    try {
      // The key's allowlist before the alias is looked up: a key learns nothing of aliases it may not use.
      if (options.tenancy) charge = options.tenancy.charge(ctx.principal, { request, requestId: ctx.requestId, ...(ctx.onQuota ? { onQuota: ctx.onQuota } : {}) });
      route = routes.lookup(request.model);
      release = registry.admit(stop);
    } catch (error) {
      observer.ended(toGatewayError(error));
      throw error;
    }
    const onAbort = () => stop(toGatewayError(ctx.signal.reason));
    if (ctx.signal.aborted) onAbort();
    else ctx.signal.addEventListener("abort", onAbort, { once: true });

    let completed = false;
    try {
      await charge.admit(route);

      // Route plan and attempts.
      const committed = await commitAttempt(
        {
          route,
          order: options.order.order(route),
          plan: {
            request,
            dropUnsupportedParams: route.dropUnsupportedParams,
            requestId: ctx.requestId,
            maxEventBytes: config.limits.maxEventBytes,
            ...(ctx.prepare ? { prepare: ctx.prepare } : {}),
          },
          signal: controller.signal,
          observer,
          ...(ctx.deadlineAt === undefined ? {} : { deadlineAt: ctx.deadlineAt }),
        },
        attemptDeps,
      ).catch((error: unknown) => {
        throw toGatewayError(error);
      });
      const { attempt, first } = committed;
      serve(attempt);
      observer.committed(committed.records);
      charge.serving(attempt.target);
      attempt.signal.addEventListener("abort", () => stop(toGatewayError(attempt.signal.reason)), { once: true });

      // Relay.
      const dropped = attempt.droppedParams();
      const start: Delta = {
        type: "start",
        responseId: responseId(),
        provider: attempt.target.provider.name,
        model: attempt.target.model,
        ...(dropped.length > 0 ? { droppedParams: dropped } : {}),
      };
      observer.delta(start);
      yield start;
      for (let next = first; !next.done; next = await attempt.deltas.next()) {
        if (next.value.type === "finish") {
          const estimate = await meter.estimateIfMissing();
          if (estimate) {
            observer.delta(estimate);
            yield estimate;
          }
        }
        meter.observe(next.value);
        observer.delta(next.value);
        yield next.value;
      }
      completed = true;
      observer.ended();
      charge.end(meter);
    } catch (error) {
      const failure = controller.signal.aborted ? toGatewayError(controller.signal.reason) : toGatewayError(error);
      observer.ended(failure);
      charge.end(meter, failure);
      throw failure;
    } finally {
      release();
      ctx.signal.removeEventListener("abort", onAbort);
      // An early exit (the consumer returned, or an error) ends every attempt.
      if (!completed) {
        controller.abort(CONSUMER_GONE);
        charge.end(meter, CONSUMER_GONE);
      }
    }
  }

  return { catalog: () => routesOf(options.config()).catalog(), stream };
}
