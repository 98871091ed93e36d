import type { CachedAnswer } from "../../cache/cached-answer.js";
import { CACHE_HEADER, CACHE_SIMILARITY_HEADER, type CachedRoute, cacheHeaderValue, type ResponseCache, type StorePlan } from "../../cache/response-cache.js";
import type { ModelRoute } from "../../config/config.js";
import type { ChatRequest } from "../../core/chat-request.js";
import { costMicros } from "../../usage/cost.js";
import { type Answer, type CallState, routeOf, type Stage, type StagePart } from "../stage.js";

/**
 * The response cache (docs/caching.md): a hit answers the call here, and
 * the attempts never run; a miss that may be stored is captured as it
 * passes and offered to the cache once it completed. After the charge: a
 * hit is still admitted under the key's limits, and charged or not as
 * `cache.chargeHits` says. Keyed by the screened request as the client
 * sent it (before the context fit), so a hit never depends on how full a
 * target's window was.
 */
export function cacheStage(cache: ResponseCache | undefined): Stage {
  return {
    name: "cache",
    open(call) {
      const route = routeOf(call);
      const cached = route.cache;
      if (!cached || !cache || !call.cacheRequest) {
        call.summary.headers[CACHE_HEADER] = "off";
        return undefined;
      }
      return consult(cache, call, { ...route, cache: cached }, call.cacheRequest);
    },
  };
}

/** The cache's verdict for one call: a hit answers it, a miss that may be stored is captured. */
async function consult(cache: ResponseCache, call: CallState, route: CachedRoute, request: ChatRequest): Promise<StagePart | undefined> {
  const { ctx } = call;
  const lookup = await cache.lookup(request, route, ctx.principal, ctx.cachePolicy ?? "default", { requestId: ctx.requestId, signal: call.signal });
  const value = cacheHeaderValue(lookup.result);
  call.summary.headers[CACHE_HEADER] = value;
  if (lookup.similarity !== undefined) call.summary.headers[CACHE_SIMILARITY_HEADER] = lookup.similarity.toFixed(4);
  call.summary.facts.cache = value;
  if (lookup.answer) return { answer: hit(cache, call, route, lookup.answer, lookup.result === "hit_semantic" ? { kind: "semantic", similarity: lookup.similarity } : { kind: "exact" }) };
  return lookup.store ? missStored(cache, call, route, lookup.store) : undefined;
}

/** A hit: what it saved (or its charge, under chargeHits), and the stored answer as the call's. */
function hit(cache: ResponseCache, call: CallState, route: ModelRoute, answer: CachedAnswer, kind: { readonly kind: "exact" | "semantic"; readonly similarity?: number | undefined }): Answer {
  const target = route.targets.find((t) => t.key === answer.target);
  const savedMicros = costMicros(answer.usage, target?.price);
  if (cache.settings.chargeHits) {
    if (target) call.charge.serving(target);
    call.summary.record.cacheHit = { kind: kind.kind, savedMicros: 0 };
  } else {
    call.summary.record.cacheHit = { kind: kind.kind, savedMicros };
    cache.saved(route.alias, savedMicros);
  }
  const said = { kind: kind.kind, requestId: answer.requestId, ...(kind.similarity === undefined ? {} : { similarity: kind.similarity }) };
  return { start: { provider: answer.provider, model: answer.model, cache: said }, deltas: answer.deltas };
}

/** A miss the cache may keep: its answer captured as it passes, offered once the call completed. */
function missStored(cache: ResponseCache, call: CallState, route: ModelRoute, plan: StorePlan): StagePart {
  return {
    tap: (delta) => {
      if (delta.type !== "start") plan.capture.observe(delta);
    },
    end: ({ failure, cut }) => {
      const served = call.servedBy;
      // A cut answer is not what the target answers; the capture would decline it (finish `length`) anyway.
      if (failure || cut || !served) return;
      cache.offer(route.alias, plan, { requestId: call.ctx.requestId, target: served.key, provider: served.provider.name, model: served.model });
    },
  };
}
