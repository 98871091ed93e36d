import type { Priority } from "../admission/provider-gate.js";
import { randomUUID } from "node:crypto";
import type { RouteTarget } from "../config/config.js";
import { quoteClientValue } from "../core/client-text.js";
import { embedAsChat, type EmbedRequest, type EmbedResult } from "../core/embed-request.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import { type EmbedAttempt, startEmbedAttempt } from "../attempt/embed-attempt.js";
import type { EmbeddingAnswer } from "../providers/embedding-adapter.js";
import { embeddingAdapterFor } from "../providers/registry.js";
import { runAttempts } from "../resilience/attempts.js";
import { routeTableOf } from "../routing/route-table.js";
import { NO_CHARGE, type TenantCharge } from "../tenancy/tenant-charge.js";
import type { MeteredUsage } from "../usage/usage-meter.js";
import { countedEmbedTokens } from "../usage/embed-tokens.js";
import type { ChatPipelineOptions, StreamContext } from "./chat-pipeline.js";
import { type ChatRequest, messageText } from "../core/chat-request.js";
import { NO_POLICY, policyFor } from "../compliance/pii-policy.js";
import { screeningIsLong, screenRequest, screenRequestInSlices, unscreened } from "../compliance/screen-request.js";
import { screenStage } from "./screen-stage.js";

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

  return {
    async embed(asked, ctx) {
      const config = options.config();
      const routes = routeTableOf(config.models);
      const policy = policyFor(config, ctx.principal, routes.has(asked.model) ? routes.lookup(asked.model) : undefined);
      const chat = embedAsChat(asked);
      // Megabytes of input are screened in slices, the event loop turning between them.
      const screened = policy === NO_POLICY ? unscreened(chat) : screeningIsLong(chat) ? await screenRequestInSlices(chat, policy, ctx.signal) : screenRequest(chat, policy);
      // Embeddings have no answer to restore: the redacted texts are what is embedded.
      const request = screened.vault ? redactedInputs(asked, screened.request) : asked;
      const view = screened.request;
      const observer = options.telemetry.stream({
        requestId: ctx.requestId,
        edge: ctx.edge,
        alias: routes.has(request.model) ? request.model : "unknown",
        request: view,
        operation: "embeddings",
        ...(ctx.trace ? { parent: ctx.trace } : {}),
        ...(ctx.fields ? { fields: ctx.fields } : {}),
        ...(policy.keptLocal ? { withholdContent: true } : {}),
      });
      const controller = new AbortController();
      const onAbort = () => controller.abort(toGatewayError(ctx.signal.reason));
      let charge: TenantCharge = NO_CHARGE;
      let release: () => void = () => undefined;
      let usage: MeteredUsage = NO_USAGE;
      let failure: GatewayError | undefined;
      try {
        // The key's allowlist before the alias is looked up: a key learns nothing of aliases it may not use.
        if (options.tenancy) charge = options.tenancy.charge(ctx.principal, { request: view, requestId: ctx.requestId, ...(ctx.onQuota ? { onQuota: ctx.onQuota } : {}), ...(ctx.tags ? { tags: ctx.tags } : {}), ...(ctx.remote ? { remote: ctx.remote } : {}) });
        const route = policy === NO_POLICY ? routes.lookup(request.model) : screenStage(screened, routes.lookup(request.model), ctx, charge, options.onCompliance);
        const order = options.order.order(route).filter(embeds);
        if (order.length === 0) {
          const kinds = [...new Set(route.targets.map((t) => t.provider.kind))].join(", ");
          throw new GatewayError("invalid_request", `model ${quoteClientValue(request.model)} cannot embed: its providers (${kinds}) have no embeddings API`, { field: "model" });
        }
        release = options.registry.admit((reason) => controller.abort(reason));
        if (ctx.signal.aborted) onAbort();
        else ctx.signal.addEventListener("abort", onAbort, { once: true });
        await charge.admit(route);
        const settled = await runAttempts<EmbeddingAnswer, EmbedAttempt>(
          { route, order, signal: controller.signal, observer, ...(ctx.deadlineAt === undefined ? {} : { deadlineAt: ctx.deadlineAt }) },
          runDeps,
          (target, attemptObserver, ended) =>
            startEmbedAttempt(request, target, embeddingAdapterFor(target.provider.kind)!, { requestId: ctx.requestId, observer: attemptObserver, ended, ...(ctx.background ? { priority: "background" as const } : {}) }, attemptDeps, controller.signal),
        );
        const { attempt, first: answer } = settled;
        observer.committed(settled.records);
        charge.serving(attempt.target);
        const estimated = answer.inputTokens === undefined;
        usage = { ...NO_USAGE, inputTokens: answer.inputTokens ?? (await countedEmbedTokens(request)), estimated };
        observer.delta({ type: "start", responseId: `emb_${randomUUID().replaceAll("-", "")}`, provider: attempt.target.provider.name, model: attempt.target.model });
        observer.delta({ type: "usage", ...usage });
        observer.delta({ type: "finish", reason: "stop" });
        return { vectors: answer.vectors, inputTokens: usage.inputTokens, estimated, provider: attempt.target.provider.name, model: attempt.target.model };
      } catch (error) {
        failure = controller.signal.aborted ? toGatewayError(controller.signal.reason) : toGatewayError(error);
        throw failure;
      } finally {
        ctx.signal.removeEventListener("abort", onAbort);
        observer.ended(failure);
        release();
        const settledUsage = usage;
        charge.end({ ttftMs: undefined, final: () => Promise.resolve(settledUsage) }, failure);
      }
    },
  };
}
