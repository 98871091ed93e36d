import { describe, expect, it } from "vitest";
import type { AnswerCapture, CachedAnswer, Origin } from "../../../src/cache/cached-answer.js";
import type { CachedRoute, Lookup, ResponseCache, StorePlan } from "../../../src/cache/response-cache.js";
import type { AliasCache, CacheSettings } from "../../../src/config/config.js";
import type { CachePolicy } from "../../../src/core/cache-policy.js";
import type { ChatRequest } from "../../../src/core/chat-request.js";
import type { ContentDelta } from "../../../src/core/delta.js";
import { GatewayError } from "../../../src/core/errors.js";
import { cacheStage } from "../../../src/pipeline/stages/cache.js";
import type { Principal } from "../../../src/tenancy/principal.js";
import { fakeCall, fakeCharge, route, target } from "../helpers/fake-call.js";

const KEY: Principal = { name: "team-a", id: "aaaaaaaaaaaa", sha256: "a".repeat(64), source: "config", limits: {} };
const ALIAS_CACHE: AliasCache = { exactTtlMs: 60_000, scope: "key", cacheToolCalls: false };
// $2 and $4 per million tokens: the stored answer's 1,000 in and 500 out cost 2,000 + 2,000 micro-dollars.
const PRICED = target("m", { price: { inputPerMTok: 2, outputPerMTok: 4 } });
const CACHED = route({ cache: ALIAS_CACHE, targets: [PRICED] });
const DELTAS: ContentDelta[] = [
  { type: "text", text: "stored" },
  { type: "finish", reason: "stop" },
];
const ANSWER: CachedAnswer = { deltas: DELTAS, usage: { inputTokens: 1_000, outputTokens: 500, cachedInputTokens: 0, reasoningTokens: 0 }, requestId: "r-old", target: "p/m", provider: "p", model: "m", storedAt: 0 };

interface Asked {
  readonly request: ChatRequest;
  readonly route: CachedRoute;
  readonly principal: Principal | undefined;
  readonly policy: CachePolicy;
  readonly context: { readonly requestId: string; readonly signal: AbortSignal };
}

/** A cache that answers every lookup with `found`, and keeps what it is offered and told it saved. */
function fakeCache(found: Lookup, chargeHits = false) {
  const asked: Asked[] = [];
  const offered: Array<{ readonly alias: string; readonly plan: StorePlan; readonly origin: Origin }> = [];
  const saved: Array<[string, number]> = [];
  const settings: Pick<CacheSettings, "chargeHits"> = { chargeHits };
  const cache: Pick<ResponseCache, "lookup" | "offer" | "saved" | "settings"> = {
    lookup(request, r, principal, policy, context) {
      asked.push({ request, route: r, principal, policy, context });
      return Promise.resolve(found);
    },
    offer: (alias, plan, origin) => void offered.push({ alias, plan, origin }),
    saved: (alias, micros) => void saved.push([alias, micros]),
    settings: settings as CacheSettings,
  };
  return { cache: cache as ResponseCache, asked, offered, saved };
}

/** A store plan whose capture keeps what it observes. */
function storePlan() {
  const observed: ContentDelta[] = [];
  const capture: Pick<AnswerCapture, "observe"> = { observe: (d) => void observed.push(d) };
  return { plan: { capture: capture as AnswerCapture } satisfies StorePlan, observed };
}

describe("cache stage", () => {
  it("says `off`, and looks nothing up, for an alias without a cache, a gateway without one, or a call it may not key", async () => {
    const { cache, asked } = fakeCache({ result: "miss" });
    const uncached = fakeCall().call;
    expect(await cacheStage(cache).open(uncached)).toBeUndefined();
    expect(uncached.summary.headers["sluice-cache"]).toBe("off");
    const noCache = fakeCall({ route: CACHED }).call;
    expect(await cacheStage(undefined).open(noCache)).toBeUndefined();
    expect(noCache.summary.headers["sluice-cache"]).toBe("off");
    const unkeyed = fakeCall({ route: CACHED }).call;
    unkeyed.cacheRequest = undefined;
    expect(await cacheStage(cache).open(unkeyed)).toBeUndefined();
    expect(unkeyed.summary.headers["sluice-cache"]).toBe("off");
    expect(asked).toEqual([]);
  });

  it("looks up the cache key (not the request sent) for the caller, under the call's policy and signal", async () => {
    const { cache, asked } = fakeCache({ result: "miss" });
    const { call } = fakeCall({ route: CACHED, ctx: { principal: KEY, cachePolicy: "no_store", requestId: "r5" } });
    const key = { ...call.request, model: "keyed" };
    call.cacheRequest = key;
    expect(await cacheStage(cache).open(call)).toBeUndefined();
    expect(asked).toEqual([{ request: key, route: CACHED, principal: KEY, policy: "no_store", context: { requestId: "r5", signal: call.signal } }]);
    expect(call.summary.headers["sluice-cache"]).toBe("miss");
    expect(call.summary.facts.cache).toBe("miss");
    expect(fakeCall({ route: CACHED }).call.ctx.cachePolicy).toBeUndefined();
  });

  it("an exact hit answers the call, and books what it saved in the usage record's facts and the cache", async () => {
    const { cache, saved } = fakeCache({ result: "hit_exact", answer: ANSWER });
    const charge = fakeCharge();
    const { call } = fakeCall({ route: CACHED, charge });
    const part = await cacheStage(cache).open(call);
    expect(part?.answer).toEqual({ start: { provider: "p", model: "m", cache: { kind: "exact", requestId: "r-old" } }, deltas: DELTAS });
    expect(part?.tap).toBeUndefined();
    expect(call.summary.record.cacheHit).toEqual({ kind: "exact", savedMicros: 4_000 });
    expect(charge.calls).toEqual([]);
    expect(saved).toEqual([["a", 4_000]]);
    expect(call.summary.headers["sluice-cache"]).toBe("hit-exact");
    expect(call.summary.facts.cache).toBe("hit-exact");
  });

  it("under chargeHits a hit is charged at its target's price and saves nothing", async () => {
    const { cache, saved } = fakeCache({ result: "hit_exact", answer: ANSWER }, true);
    const charge = fakeCharge();
    const { call } = fakeCall({ route: CACHED, charge });
    await cacheStage(cache).open(call);
    expect(charge.calls).toEqual([{ method: "serving", args: [PRICED] }]);
    expect(call.summary.record.cacheHit).toEqual({ kind: "exact", savedMicros: 0 });
    expect(saved).toEqual([]);
  });

  it("a semantic hit names its similarity in the header and the start", async () => {
    const { cache } = fakeCache({ result: "hit_semantic", answer: ANSWER, similarity: 0.95 });
    const { call } = fakeCall({ route: CACHED });
    const part = await cacheStage(cache).open(call);
    expect(part?.answer?.start.cache).toEqual({ kind: "semantic", requestId: "r-old", similarity: 0.95 });
    expect(call.summary.headers).toMatchObject({ "sluice-cache": "hit-semantic", "sluice-cache-similarity": "0.9500" });
    expect(call.summary.record.cacheHit).toEqual({ kind: "semantic", savedMicros: 4_000 });
  });

  it("a miss that may be stored taps the answer's content (not its start) and offers it once completed, with the target that served it", async () => {
    const { plan, observed } = storePlan();
    const { cache, offered } = fakeCache({ result: "miss", store: plan });
    const { call } = fakeCall({ route: CACHED, ctx: { requestId: "r6" } });
    const part = await cacheStage(cache).open(call);
    expect(part?.answer).toBeUndefined();
    part?.tap?.({ type: "start", responseId: "resp_1", provider: "p", model: "m" });
    part?.tap?.(DELTAS[0]!);
    expect(observed).toEqual([DELTAS[0]]);
    part?.end?.({});
    expect(offered).toEqual([]);
    call.servedBy = PRICED;
    part?.end?.({});
    expect(offered).toEqual([{ alias: "a", plan, origin: { requestId: "r6", target: "p/m", provider: "p", model: "m" } }]);
  });

  it("a failed miss is never offered", async () => {
    const { plan } = storePlan();
    const { cache, offered } = fakeCache({ result: "miss", store: plan });
    const { call } = fakeCall({ route: CACHED });
    const part = await cacheStage(cache).open(call);
    call.servedBy = PRICED;
    part?.end?.({ failure: new GatewayError("canceled", "gone") });
    expect(offered).toEqual([]);
  });
});
