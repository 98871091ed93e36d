import { randomUUID } from "node:crypto";
import type { Priority } from "../admission/provider-gate.js";
import { type EmbedAttempt, startEmbedAttempt } from "../attempt/embed-attempt.js";
import { unscreened } from "../compliance/screen-request.js";
import type { RouteTarget } from "../config/config.js";
import { createCallSummary } from "../core/call-summary.js";
import { type ChatRequest, messageText } from "../core/chat-request.js";
import { quoteClientValue } from "../core/client-text.js";
import { type EmbedRequest, type EmbedResult, embedAsChat } from "../core/embed-request.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import type { EmbeddingAnswer } from "../providers/embedding-adapter.js";
import { embeddingAdapterFor } from "../providers/registry.js";
import { runAttempts } from "../resilience/attempts.js";
import { routeTableOf } from "../routing/route-table.js";
import { NO_CHARGE } from "../tenancy/tenant-charge.js";
import { countedEmbedTokens } from "../usage/embed-tokens.js";
import type { MeteredUsage, UsageMeter } from "../usage/usage-meter.js";
import type { ChatPipelineOptions } from "./chat-pipeline.js";
import { endCall, openCall, openStages } from "./open-stages.js";
import { QUIET_OBSERVER } from "./quiet-observer.js";
import type { CallState } from "./stage.js";
import { embeddingStages } from "./stages/index.js";
import type { StreamContext } from "./stream-context.js";

/** Embedding calls, through the same stages as a stream. */
export interface EmbedPipeline {
  /** Throws a GatewayError: the key's refusals, `unknown_model`, `invalid_request` for an alias that cannot embed, the last attempt's failure. */
  embed(request: EmbedRequest, ctx: StreamContext): Promise<EmbedResult>;
}

const embeds = (target: RouteTarget): boolean => embeddingAdapterFor(target.provider.kind) !== undefined;

const NO_USAGE: MeteredUsage = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0, estimated: false };

/**
 * An embedding call takes a stream's path (chat-pipeline.ts) with one
 * answer instead of deltas: the key's allowlist, then the alias, a slot in
 * the stream registry (so a drain waits for it), the key's limits and
 * budget (prompt tokens only: an embedding has no output), attempts with
 * retries, failover, hedging and breakers (an embedding request is
 * idempotent, so any failure before the answer may be retried), and at the
 * end the usage settled and the telemetry of a call whose answer is one
 * usage delta. Targets of an alias whose provider has no embeddings API
 * are skipped; an alias with none is refused as the caller's mistake.
 */
/** The request with its text inputs and end-user id as the screen redacted them (one message per input, in order); token arrays are left as they are. */
function redactedInputs(request: EmbedRequest, redacted: ChatRequest): EmbedRequest {
  const user = redacted.metadata.userId;
  return { ...request, inputs: request.inputs.map((input, i) => (typeof input === "string" ? messageText(redacted.messages[i]!) : input)), ...(user === undefined ? {} : { user }) };
}

export function createEmbedPipeline(options: ChatPipelineOptions): EmbedPipeline {
  const runDeps = { breakers: options.breakers, stats: options.stats, random: options.random ?? Math.random };
  const attemptDeps = { client: options.client, admit: (target: RouteTarget, signal: AbortSignal, priority?: Priority) => options.gates.gateFor(target.provider).acquire(signal, priority) };
  const stages = embeddingStages({
    telemetry: options.telemetry,
    registry: options.registry,
    subcall: () => {
      throw new GatewayError("internal", "an embedding call has no conversation to summarise");
    },
    ...(options.tenancy ? { tenancy: options.tenancy } : {}),
    ...(options.onCompliance ? { onCompliance: options.onCompliance } : {}),
  });
  const reportEndFailure = (error: unknown) => options.logger?.error({ event: "stage.end_failed", error: toGatewayError(error).message });

  return {
    async embed(asked, ctx) {
      const config = options.config();
      const controller = new AbortController();
      const chat = embedAsChat(asked);
      let usage: MeteredUsage = NO_USAGE;
      const call: CallState = {
        config,
        routes: routeTableOf(config.models),
        ctx,
        summary: ctx.summary ?? createCallSummary(),
        operation: "embeddings",
        signal: controller.signal,
        meter: embeddingMeter(() => usage),
        stop: (reason) => controller.abort(reason),
        request: chat,
        route: undefined,
        charge: NO_CHARGE,
        observer: QUIET_OBSERVER,
        screened: unscreened(chat),
        cacheRequest: undefined,
        restored: false,
        servedBy: undefined,
        cut: undefined,
      };
      const open = openCall();
      const onAbort = () => controller.abort(toGatewayError(ctx.signal.reason));
      if (ctx.signal.aborted) onAbort();
      else ctx.signal.addEventListener("abort", onAbort, { once: true });
      let failure: GatewayError | undefined;
      try {
        await openStages(stages, call, open);
        if (controller.signal.aborted) throw controller.signal.reason;
        // Embeddings have no answer to restore: the redacted texts are what is embedded.
        const request = call.screened.vault ? redactedInputs(asked, call.screened.request) : asked;
        const route = call.route!;
        const order = options.order.order(route).filter(embeds);
        if (order.length === 0) {
          const kinds = [...new Set(route.targets.map((t) => t.provider.kind))].join(", ");
          throw new GatewayError("invalid_request", `model ${quoteClientValue(request.model)} cannot embed: its providers (${kinds}) have no embeddings API`, { field: "model" });
        }
        const settled = await runAttempts<EmbeddingAnswer, EmbedAttempt>(
          { route, order, signal: controller.signal, observer: call.observer, ...(ctx.deadlineAt === undefined ? {} : { deadlineAt: ctx.deadlineAt }) },
          runDeps,
          (target, attemptObserver, ended) =>
            startEmbedAttempt(
              request,
              target,
              embeddingAdapterFor(target.provider.kind)!,
              { requestId: ctx.requestId, observer: attemptObserver, ended, ...(ctx.background ? { priority: "background" as const } : {}) },
              attemptDeps,
              controller.signal,
            ),
        );
        const { attempt, first: answer } = settled;
        call.observer.committed(settled.records);
        call.charge.serving(attempt.target);
        call.servedBy = attempt.target;
        const estimated = answer.inputTokens === undefined;
        usage = { ...NO_USAGE, inputTokens: answer.inputTokens ?? (await countedEmbedTokens(request)), estimated };
        call.observer.delta({ type: "start", responseId: `emb_${randomUUID().replaceAll("-", "")}`, provider: attempt.target.provider.name, model: attempt.target.model });
        call.observer.delta({ type: "usage", ...usage });
        call.observer.delta({ type: "finish", reason: "stop" });
        return { vectors: answer.vectors, inputTokens: usage.inputTokens, estimated, provider: attempt.target.provider.name, model: attempt.target.model };
      } catch (error) {
        failure = controller.signal.aborted ? toGatewayError(controller.signal.reason) : toGatewayError(error);
        throw failure;
      } finally {
        ctx.signal.removeEventListener("abort", onAbort);
        endCall(open, failure ? { failure } : {}, reportEndFailure);
      }
    },
  };
}

/** What an embedding call's charge settles with: its one usage, known once the answer came; nothing counted per delta. */
function embeddingMeter(usage: () => MeteredUsage): UsageMeter {
  return {
    observe: () => undefined,
    produced: false,
    ttftMs: undefined,
    missingUsage: false,
    estimateIfMissing: () => Promise.resolve(undefined),
    final: () => Promise.resolve(usage()),
  };
}
