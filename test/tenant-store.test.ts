import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KeyBudget, KeyLimits } from "../src/config/config.js";
import { createFailOpenStore } from "../src/store/fail-open-store.js";
import { createMemoryTenantStore } from "../src/store/memory-tenant-store.js";
import { createRedisTenantStore, type SluiceRedisClient } from "../src/store/redis-tenant-store.js";
import { type AdmitRequest, type ParentLevel, type Settlement, subjectOf, type TenantStore } from "../src/store/tenant-store.js";
import { PERIOD_KINDS, periodOf } from "../src/usage/periods.js";
import type { UsageRecord } from "../src/usage/usage-record.js";
import { dropPrefix, dumpPrefix, startOwnRedis, storeClient, testPrefix } from "./helpers/redis.js";

/** A clock the test moves: time is the subject here (minute windows, periods, leases). */
function testClock(start = Date.UTC(2026, 4, 14, 12, 0, 0)) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms), set: (ms: number) => (t = ms) };
}

interface Fixture {
  store: TenantStore;
  clock: ReturnType<typeof testClock>;
}

let redis: SluiceRedisClient;
const prefixes: string[] = [];
beforeAll(async () => {
  redis = await storeClient();
});
afterAll(async () => {
  for (const p of prefixes) await dropPrefix(p);
  redis.disconnect();
});

const LEASE_MS = 60_000;
const STORES: Record<string, () => Fixture> = {
  memory: () => {
    const clock = testClock();
    return { clock, store: createMemoryTenantStore({ now: clock.now, streamLeaseMs: LEASE_MS }) };
  },
  redis: () => {
    const clock = testClock();
    const prefix = testPrefix("store");
    prefixes.push(prefix);
    return { clock, store: createRedisTenantStore({ client: redis, prefix, streamLeaseMs: LEASE_MS, usageStreamMaxLen: 10_000, now: clock.now }) };
  },
};

let ids = 0;
function admission(key: string, limits: KeyLimits, extra: Partial<AdmitRequest> = {}): AdmitRequest {
  return { key, admissionId: `adm-${++ids}`, limits, reserveTokens: 0, reserveMicros: 0, ...extra };
}

function record(key: string, fields: Partial<UsageRecord> = {}): UsageRecord {
  return {
    requestId: `req-${ids}`,
    key,
    alias: "demo",
    target: "sim/sim-1",
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
    reasoningTokens: 0,
    costMicros: 0,
    estimated: false,
    durationMs: 5,
    outcome: "completed",
    at: 0,
    ...fields,
  };
}

function settlement(req: AdmitRequest, admittedAt: number, fields: Partial<UsageRecord> = {}, extra: Partial<Settlement> = {}): Settlement {
  return {
    admissionId: req.admissionId,
    key: req.key,
    admittedAt,
    shared: true,
    reservedTokens: req.reserveTokens,
    reservedMicros: req.reserveMicros,
    ...(req.budget ? { budgetPeriod: req.budget.period } : {}),
    record: record(req.key, fields),
    ...extra,
  };
}

async function admitOk(store: TenantStore, req: AdmitRequest) {
  const result = await store.admit(req);
  if (!result.ok) throw new Error(`expected admission, got ${result.reason}`);
  return result;
}

for (const [name, make] of Object.entries(STORES)) {
  describe(`the ${name} tenant store`, () => {
    it("admits requestsPerMinute requests in any 60 s window, then says when the oldest leaves", async () => {
      const { store, clock } = make();
      const limits = { requestsPerMinute: 3 };
      const first = await admitOk(store, admission("k", limits));
      expect(first.quota.requests).toEqual({ limit: 3, remaining: 2, resetMs: 60_000 });
      clock.advance(10_000);
      await admitOk(store, admission("k", limits));
      const third = await admitOk(store, admission("k", limits));
      expect(third.quota.requests).toEqual({ limit: 3, remaining: 0, resetMs: 50_000 });
      const refused = await store.admit(admission("k", limits));
      expect(refused).toMatchObject({ ok: false, reason: "requests", retryAfterMs: 50_000 });
      clock.advance(50_000);
      const again = await admitOk(store, admission("k", limits));
      expect(again.quota.requests?.remaining).toBe(0);
      // Another key has its own window.
      await admitOk(store, admission("other", limits));
    });

    it("reserves tokens, refuses what would exceed the limit, and refunds the unused part at settle", async () => {
      const { store, clock } = make();
      const limits = { tokensPerMinute: 1_000 };
      const tooBig = await store.admit(admission("k", limits, { reserveTokens: 1_200 }));
      expect(tooBig).toMatchObject({ ok: false, reason: "tokens" });
      expect(tooBig.ok === false && tooBig.retryAfterMs).toBeUndefined();

      const big = admission("k", limits, { reserveTokens: 600 });
      const admitted = await admitOk(store, big);
      expect(admitted.quota.tokens).toMatchObject({ limit: 1_000, remaining: 400 });
      clock.advance(1_000);
      const refused = await store.admit(admission("k", limits, { reserveTokens: 500 }));
      expect(refused).toMatchObject({ ok: false, reason: "tokens", retryAfterMs: 59_000 });

      await store.settle(settlement(big, admitted.admittedAt, { inputTokens: 40, outputTokens: 60 }));
      const after = await admitOk(store, admission("k", limits, { reserveTokens: 500 }));
      expect(after.quota.tokens?.remaining).toBe(1_000 - 100 - 500);
    });

    it("counts the excess of a stream that outlived the window when it ends", async () => {
      const { store, clock } = make();
      const limits = { tokensPerMinute: 1_000 };
      const req = admission("k", limits, { reserveTokens: 100 });
      const admitted = await admitOk(store, req);
      clock.advance(90_000);
      await store.settle(settlement(req, admitted.admittedAt, { inputTokens: 100, outputTokens: 300 }));
      const next = await admitOk(store, admission("k", limits, { reserveTokens: 10 }));
      expect(next.quota.tokens?.remaining).toBe(1_000 - 300 - 10);
    });

    it("holds concurrentStreams slots until each stream settles", async () => {
      const { store } = make();
      const limits = { concurrentStreams: 2 };
      const a = admission("k", limits);
      const first = await admitOk(store, a);
      await admitOk(store, admission("k", limits));
      const refused = await store.admit(admission("k", limits));
      expect(refused).toMatchObject({ ok: false, reason: "streams", retryAfterMs: 1_000 });
      await store.settle(settlement(a, first.admittedAt));
      const again = await admitOk(store, admission("k", limits));
      expect(again.quota.streams).toEqual({ limit: 2, inUse: 2 });
    });

    it("releases the slot and reservation of a stream whose replica never settled it, after its lease", async () => {
      const { store, clock } = make();
      const budget: KeyBudget = { usdMicros: 1_000, period: "month" };
      await admitOk(store, admission("k", { concurrentStreams: 1 }, { budget, reserveMicros: 800 }));
      const refused = await store.admit(admission("k", { concurrentStreams: 1 }, { budget, reserveMicros: 800 }));
      expect(refused).toMatchObject({ ok: false, reason: "streams" });
      clock.advance(LEASE_MS + 1);
      const later = await admitOk(store, admission("k", { concurrentStreams: 1 }, { budget, reserveMicros: 800 }));
      expect(later.quota.budget?.usedMicros).toBe(800);
    });

    it("releases a lease that ran out whoever looks next, and never shows a dead stream's reservation", async () => {
      const { store, clock } = make();
      const budget: KeyBudget = { usdMicros: 1_000, period: "month" };
      const parents: ParentLevel[] = [{ level: "team", id: "t", name: "t", limits: {}, budget: { usdMicros: 5_000, period: "day" } }];
      await admitOk(store, admission("dead", { concurrentStreams: 1 }, { budget, reserveMicros: 800, parents }));
      expect((await store.usage("dead", "month")).reservedMicros).toBe(800);
      clock.advance(LEASE_MS + 1);
      // Nobody of that key or team was admitted since: the read itself releases it, at every level.
      expect((await store.usage("dead", "month")).reservedMicros).toBe(0);
      expect((await store.usage(subjectOf(parents[0]!), "day")).reservedMicros).toBe(0);
      const again = await admitOk(store, admission("dead", { concurrentStreams: 1 }, { budget, reserveMicros: 800 }));
      expect(again.quota.budget).toMatchObject({ usedMicros: 800, reservedMicros: 800 });
    });

    it("renews a running stream's lease on each heartbeat, and its settle frees slot and reservation once", async () => {
      const { store, clock } = make();
      const budget: KeyBudget = { usdMicros: 1_000, period: "month" };
      const limits = { concurrentStreams: 1 };
      const parents: ParentLevel[] = [{ level: "team", id: "t", name: "t", limits: { concurrentStreams: 1 }, budget: { usdMicros: 5_000, period: "day" } }];
      const a = admission("k", limits, { budget, reserveMicros: 300, parents });
      const first = await admitOk(store, a);
      for (let i = 0; i < 3; i++) {
        clock.advance(LEASE_MS / 2);
        await store.heartbeat([a.admissionId]);
      }
      // A lease and a half after admission the stream still holds its slot (at the key and the team) and its reservation.
      expect(await store.admit(admission("k", limits, { budget, reserveMicros: 300 }))).toMatchObject({ ok: false, reason: "streams" });
      expect(await store.admit(admission("other", {}, { parents }))).toMatchObject({ ok: false, reason: "streams", level: "team" });
      expect((await store.usage("k", "month")).reservedMicros).toBe(300);
      await store.settle(settlement(a, first.admittedAt, { costMicros: 100 }, { parents: [{ level: "team", id: "t", name: "t", reservedTokens: 0 }] }));
      expect(await store.usage("k", "month")).toMatchObject({ spendMicros: 100, reservedMicros: 0 });
      expect(await store.usage(subjectOf(parents[0]!), "day")).toMatchObject({ spendMicros: 100, reservedMicros: 0 });
      await admitOk(store, admission("k", limits, { budget, reserveMicros: 300 }));
    });

    it("does not revive a lease that ran out before its heartbeat: the later settle counts the spend and frees nothing twice", async () => {
      const { store, clock } = make();
      const budget: KeyBudget = { usdMicros: 1_000, period: "month" };
      const a = admission("k", { concurrentStreams: 1 }, { budget, reserveMicros: 300 });
      const first = await admitOk(store, a);
      const b = admission("other", {}, { budget, reserveMicros: 200 });
      await admitOk(store, b);
      clock.advance(LEASE_MS + 1);
      // Another replica's heartbeat releases both leases that ran out, renewing only its own live stream.
      await store.heartbeat([b.admissionId]);
      await store.heartbeat([a.admissionId]);
      expect((await store.usage("k", "month")).reservedMicros).toBe(0);
      await store.settle(settlement(a, first.admittedAt, { costMicros: 250 }));
      expect(await store.usage("k", "month")).toMatchObject({ spendMicros: 250, reservedMicros: 0 });
    });

    it("refuses an admission on settings older than the store's as stale, counting nothing", async () => {
      const { store } = make();
      const version = await store.keysVersion();
      await admitOk(store, admission("k", { requestsPerMinute: 1 }, { settingsVersion: version }));
      await store.putLevel("team", { name: "t", limits: {}, createdAt: 1 }, "create");
      expect(await store.admit(admission("k", { requestsPerMinute: 2 }, { settingsVersion: version }))).toMatchObject({ ok: false, reason: "stale" });
      const fresh = await admitOk(store, admission("k", { requestsPerMinute: 2 }, { settingsVersion: await store.keysVersion() }));
      expect(fresh.quota.requests?.remaining).toBe(0);
    });

    it("tells a budget refusal's level figures, so the words can say spent or held", async () => {
      const { store } = make();
      const parents: ParentLevel[] = [{ level: "team", id: "t", name: "t", limits: {}, budget: { usdMicros: 1_000, period: "month" } }];
      const a = admission("a", {}, { parents, reserveMicros: 300 });
      const first = await admitOk(store, a);
      await store.settle(settlement(a, first.admittedAt, { costMicros: 200 }, { parents: [{ level: "team", id: "t", name: "t", reservedTokens: 0 }] }));
      await admitOk(store, admission("a", {}, { parents, reserveMicros: 700 }));
      const held = await store.admit(admission("b", {}, { parents, reserveMicros: 400 }));
      expect(held).toMatchObject({ ok: false, reason: "budget", level: "team", levelBudget: { usedMicros: 900, reservedMicros: 700 } });
    });

    it("reserves the most a request can cost, settles what it did cost, and refuses once the budget is spent", async () => {
      const { store, clock } = make();
      const budget: KeyBudget = { usdMicros: 1_000, period: "month" };
      const a = admission("k", {}, { budget, reserveMicros: 600 });
      const first = await admitOk(store, a);
      expect(first.quota.budget).toMatchObject({ limitMicros: 1_000, usedMicros: 600 });
      const refused = await store.admit(admission("k", {}, { budget, reserveMicros: 600 }));
      expect(refused).toMatchObject({ ok: false, reason: "budget" });
      const endOfMonth = Date.UTC(2026, 5, 1) - clock.now();
      expect(refused.ok === false && refused.retryAfterMs).toBe(endOfMonth);

      await store.settle(settlement(a, first.admittedAt, { costMicros: 450 }));
      const b = admission("k", {}, { budget, reserveMicros: 550 });
      const second = await admitOk(store, b);
      expect(second.quota.budget?.usedMicros).toBe(450 + 550);
      await store.settle(settlement(b, second.admittedAt, { costMicros: 550 }));
      // 1,000 of 1,000 spent: nothing that can cost anything is admitted this month.
      expect(await store.admit(admission("k", {}, { budget, reserveMicros: 1 }))).toMatchObject({ ok: false, reason: "budget" });
      const usage = await store.usage("k", "month");
      expect(usage).toMatchObject({ periodId: "m2026-05", requests: 2, spendMicros: 1_000, reservedMicros: 0 });
      // A new month, a new budget.
      clock.set(Date.UTC(2026, 5, 1));
      const june = await admitOk(store, admission("k", {}, { budget, reserveMicros: 600 }));
      expect(june.quota.budget?.usedMicros).toBe(600);
    });

    it("tells spent and reserved apart in the budget quota", async () => {
      const { store } = make();
      const budget: KeyBudget = { usdMicros: 1_000, period: "month" };
      const a = admission("k", {}, { budget, reserveMicros: 300 });
      const first = await admitOk(store, a);
      await store.settle(settlement(a, first.admittedAt, { costMicros: 200 }));
      const held = await admitOk(store, admission("k", {}, { budget, reserveMicros: 500 }));
      expect(held.quota.budget).toMatchObject({ usedMicros: 700, reservedMicros: 500 });
      const refused = await store.admit(admission("k", {}, { budget, reserveMicros: 400 }));
      expect(refused.quota.budget).toMatchObject({ usedMicros: 700, reservedMicros: 500 });
    });

    it("releases an admission decided elsewhere: its request, tokens, slot and reservation, once however often", async () => {
      const { store } = make();
      const limits = { requestsPerMinute: 2, tokensPerMinute: 100, concurrentStreams: 1 };
      const budget: KeyBudget = { usdMicros: 1_000, period: "month" };
      const a = admission("k", limits, { budget, reserveTokens: 60, reserveMicros: 700 });
      await admitOk(store, a);
      expect(await store.admit(admission("k", limits, { budget, reserveTokens: 60, reserveMicros: 700 }))).toMatchObject({ ok: false });
      await store.release({ key: "k", admissionId: a.admissionId });
      await store.release({ key: "k", admissionId: a.admissionId });
      expect(await store.headroom("k", limits)).toEqual({ requestsRemaining: 2, tokensRemaining: 100, streamsActive: 0 });
      const after = await admitOk(store, admission("k", limits, { budget, reserveTokens: 60, reserveMicros: 700 }));
      expect(after.quota).toMatchObject({ requests: { remaining: 1 }, tokens: { remaining: 40 }, streams: { inUse: 1 }, budget: { usedMicros: 700, reservedMicros: 700 } });
      expect((await store.usage("k", "month")).requests).toBe(0);
    });

    it("reconciles a stream a replica admitted locally: what it held here is freed, its request and tokens join the windows", async () => {
      const { store, clock } = make();
      const limits = { requestsPerMinute: 3, tokensPerMinute: 100, concurrentStreams: 2 };
      const budget: KeyBudget = { usdMicros: 1_000, period: "month" };
      // The same admission ran here too, late (its caller had already admitted it locally).
      const a = admission("k", limits, { budget, reserveTokens: 50, reserveMicros: 400 });
      const late = await admitOk(store, a);
      clock.advance(1_000);
      const settled = await store.settle(settlement(a, late.admittedAt - 500, { inputTokens: 10, outputTokens: 20, costMicros: 90 }, { shared: false }));
      expect(settled).toBe("stored");
      // One request (the local one), 30 tokens used, no slot, no reservation: counted once.
      expect(await store.headroom("k", limits)).toEqual({ requestsRemaining: 2, tokensRemaining: 70, streamsActive: 0 });
      expect(await store.usage("k", "month")).toMatchObject({ requests: 1, spendMicros: 90, reservedMicros: 0 });
      // They leave the window a minute after the local admission.
      clock.advance(60_000);
      expect(await store.headroom("k", limits)).toEqual({ requestsRemaining: 3, tokensRemaining: 100, streamsActive: 0 });
    });

    it("refuses a reservation larger than the whole budget without a retry time", async () => {
      const { store } = make();
      const refused = await store.admit(admission("k", {}, { budget: { usdMicros: 100, period: "day" }, reserveMicros: 101 }));
      expect(refused).toMatchObject({ ok: false, reason: "budget" });
      expect(refused.ok === false && refused.retryAfterMs).toBeUndefined();
    });

    it("counts a settlement once, however often it is sent", async () => {
      const { store } = make();
      const req = admission("k", {});
      const admitted = await admitOk(store, req);
      const s = settlement(req, admitted.admittedAt, { inputTokens: 5, outputTokens: 7, costMicros: 3 });
      expect(await store.settle(s)).toBe("stored");
      expect(await store.settle(s)).toBe("duplicate");
      expect(await store.usage("k", "day")).toMatchObject({ requests: 1, inputTokens: 5, outputTokens: 7, spendMicros: 3 });
      expect(await store.records(10)).toHaveLength(1);
    });

    it("rolls usage up per day, week and month of the admission, and keeps the records", async () => {
      const { store, clock } = make();
      const req = admission("k", {});
      const admitted = await admitOk(store, req);
      clock.advance(3_600_000);
      await store.settle(settlement(req, admitted.admittedAt, { inputTokens: 10, outputTokens: 20, cachedInputTokens: 4, reasoningTokens: 6, costMicros: 9, estimated: true, outcome: "canceled", code: "canceled", ttftMs: 12.5 }));
      for (const kind of PERIOD_KINDS) {
        expect(await store.usage("k", kind, admitted.admittedAt)).toEqual({
          periodId: periodOf(kind, admitted.admittedAt).id,
          requests: 1,
          inputTokens: 10,
          outputTokens: 20,
          cachedInputTokens: 4,
          reasoningTokens: 6,
          spendMicros: 9,
          estimatedRequests: 1,
          reservedMicros: 0,
        });
      }
      const [kept] = await store.records(1);
      expect(kept).toMatchObject({ key: "k", inputTokens: 10, outputTokens: 20, costMicros: 9, estimated: true, outcome: "canceled", code: "canceled", ttftMs: 12.5 });
    });

    it("reports headroom: limit − N after N admissions, the settled use of tokens, and streams until each settles or its lease ends", async () => {
      const { store, clock } = make();
      const limits = { requestsPerMinute: 10, tokensPerMinute: 1_000, concurrentStreams: 5 };
      expect(await store.headroom("k", limits)).toEqual({ requestsRemaining: 10, tokensRemaining: 1_000, streamsActive: 0 });
      const held = [];
      for (let n = 1; n <= 3; n++) {
        const req = admission("k", limits, { reserveTokens: 100 });
        held.push({ req, admittedAt: (await admitOk(store, req)).admittedAt });
        expect(await store.headroom("k", limits)).toEqual({ requestsRemaining: 10 - n, tokensRemaining: 1_000 - 100 * n, streamsActive: n });
      }
      clock.advance(1_000);
      await store.settle(settlement(held[0]!.req, held[0]!.admittedAt, { inputTokens: 15, outputTokens: 25 }));
      // The request still counts in its window; its reservation became what it used; its slot is free.
      expect(await store.headroom("k", limits)).toEqual({ requestsRemaining: 7, tokensRemaining: 1_000 - 40 - 200, streamsActive: 2 });
      // Reading twice changes nothing, and another key has its own headroom.
      expect(await store.headroom("k", limits)).toEqual({ requestsRemaining: 7, tokensRemaining: 760, streamsActive: 2 });
      expect(await store.headroom("other", limits)).toEqual({ requestsRemaining: 10, tokensRemaining: 1_000, streamsActive: 0 });
      // Without per-minute limits only the streams are reported.
      expect(await store.headroom("k", {})).toEqual({ streamsActive: 2 });
      await store.settle(settlement(held[1]!.req, held[1]!.admittedAt, { inputTokens: 1, outputTokens: 1 }));
      expect(await store.headroom("k", limits)).toEqual({ requestsRemaining: 7, tokensRemaining: 1_000 - 40 - 2 - 100, streamsActive: 1 });

      clock.advance(29_000);
      const late = admission("k", limits, { reserveTokens: 100 });
      const lateAt = (await admitOk(store, late)).admittedAt;
      expect(await store.headroom("k", limits)).toEqual({ requestsRemaining: 6, tokensRemaining: 758, streamsActive: 2 });
      // The window moves on with no admission to sweep it, and the stream nobody settled stops counting when its lease ends.
      clock.advance(30_000);
      expect(await store.headroom("k", limits)).toEqual({ requestsRemaining: 9, tokensRemaining: 900, streamsActive: 1 });
      await store.settle(settlement(late, lateAt, { inputTokens: 5, outputTokens: 5 }));
      expect(await store.headroom("k", limits)).toEqual({ requestsRemaining: 9, tokensRemaining: 990, streamsActive: 0 });
    });

    describe("with a team and a business line above the key", () => {
      const team = (limits: KeyLimits, budget?: KeyBudget): ParentLevel => ({ level: "team", id: "search-1", name: "search", limits, ...(budget ? { budget } : {}) });
      const line = (limits: KeyLimits, budget?: KeyBudget): ParentLevel => ({ level: "business_line", id: "consumer-1", name: "consumer", limits, ...(budget ? { budget } : {}) });
      const parentsOfSettle = (req: AdmitRequest) => req.parents!.map((p) => ({ level: p.level, id: p.id, name: p.name, reservedTokens: p.limits.tokensPerMinute ? req.reserveTokens : 0 }));

      it("refuses at the team when two keys together reach its limit, naming the team, and leaves the refused key's own windows untouched", async () => {
        const { store } = make();
        const parents = [team({ requestsPerMinute: 2 }), line({})];
        await admitOk(store, admission("a", { requestsPerMinute: 10 }, { parents }));
        await admitOk(store, admission("b", { requestsPerMinute: 10 }, { parents }));
        const refused = await store.admit(admission("a", { requestsPerMinute: 10 }, { parents }));
        expect(refused).toMatchObject({ ok: false, reason: "requests", level: "team" });
        expect(refused.ok === false && refused.retryAfterMs).toBeGreaterThan(0);
        // The key's own window counted only the admission that passed every level.
        expect(await store.headroom("a", { requestsPerMinute: 10 })).toMatchObject({ requestsRemaining: 9 });
        // A key outside the team is not limited by it.
        await admitOk(store, admission("c", { requestsPerMinute: 10 }));
      });

      it("reserves at every level with a budget, settles each to what was spent, and refuses at the business line once its budget is spent", async () => {
        const { store, clock } = make();
        const parents = [team({}, { usdMicros: 1_000, period: "day" }), line({}, { usdMicros: 500, period: "month" })];
        const first = admission("a", {}, { parents, reserveMicros: 300 });
        const admitted = await admitOk(store, first);
        expect((await store.usage(subjectOf(parents[0]!), "day")).reservedMicros).toBe(300);
        expect((await store.usage(subjectOf(parents[1]!), "month")).reservedMicros).toBe(300);
        // The key has no budget: nothing is reserved in its rollup.
        expect((await store.usage("a", "month")).reservedMicros).toBe(0);
        // 300 held at the line: another 300 would pass 500.
        const held = await store.admit(admission("b", {}, { parents, reserveMicros: 300 }));
        expect(held).toMatchObject({ ok: false, reason: "budget", level: "business_line" });
        const monthEnd = periodOf("month", clock.now()).endMs - clock.now();
        expect(held.ok === false && held.retryAfterMs).toBe(monthEnd);

        await store.settle(settlement(first, admitted.admittedAt, { costMicros: 450 }, { parents: parentsOfSettle(first) }));
        for (const [subject, kind] of [
          [subjectOf(parents[0]!), "day"],
          [subjectOf(parents[1]!), "month"],
          ["a", "month"],
        ] as const) {
          expect(await store.usage(subject, kind)).toMatchObject({ requests: 1, spendMicros: 450, reservedMicros: 0 });
        }
        expect(await store.admit(admission("b", {}, { parents, reserveMicros: 100 }))).toMatchObject({ ok: false, reason: "budget", level: "business_line" });
        const small = await admitOk(store, admission("b", {}, { parents, reserveMicros: 50 }));
        expect(small.ok).toBe(true);
        // Levels are checked from the key up: the team (500 of 1,000 used) refuses before the line does.
        expect(await store.admit(admission("b", {}, { parents, reserveMicros: 600 }))).toMatchObject({ ok: false, reason: "budget", level: "team" });
      });

      it("holds a stream slot at the team until the stream settles, and a release frees it at every level", async () => {
        const { store } = make();
        const parents = [team({ concurrentStreams: 1, tokensPerMinute: 1_000 }), line({ concurrentStreams: 5 })];
        const first = admission("a", {}, { parents, reserveTokens: 400 });
        const admitted = await admitOk(store, first);
        expect(await store.admit(admission("b", {}, { parents, reserveTokens: 400 }))).toMatchObject({ ok: false, reason: "streams", level: "team" });
        await store.settle(settlement(first, admitted.admittedAt, { inputTokens: 50, outputTokens: 50 }, { parents: parentsOfSettle(first) }));
        // The team's tokens were refunded to what was used (100 of 400): 900 more fit.
        const second = admission("b", {}, { parents, reserveTokens: 900 });
        await admitOk(store, second);
        expect(await store.admit(admission("c", {}, { parents, reserveTokens: 10 }))).toMatchObject({ ok: false, reason: "streams", level: "team" });
        await store.release({ key: second.key, admissionId: second.admissionId, parents: parents.map(({ level, id, name }) => ({ level, id, name })) });
        await admitOk(store, admission("c", {}, { parents, reserveTokens: 900 }));
      });

      it("records the team and business line with the usage record", async () => {
        const { store } = make();
        const parents = [team({}), line({})];
        const req = admission("a", {}, { parents });
        const admitted = await admitOk(store, req);
        await store.settle(settlement(req, admitted.admittedAt, { team: "search", businessLine: "consumer", outputTokens: 3 }, { parents: parentsOfSettle(req) }));
        const [last] = await store.records(1);
        expect(last).toMatchObject({ key: "a", team: "search", businessLine: "consumer", outputTokens: 3 });
      });
    });

    it("keeps runtime keys by name, refuses a second key with the same name, and refuses a revoked key at admission", async () => {
      const { store } = make();
      const sha = "a".repeat(64);
      const before = await store.keysVersion();
      expect(await store.createKey({ name: "rt", sha256: sha, createdAt: 1, limits: { requestsPerMinute: 5 } })).toBe("created");
      expect(await store.createKey({ name: "rt", sha256: "b".repeat(64), createdAt: 2, limits: {} })).toBe("exists");
      expect(await store.keysVersion()).not.toBe(before);
      expect(await store.listKeys()).toEqual([{ name: "rt", sha256: sha, createdAt: 1, limits: { requestsPerMinute: 5 } }]);
      await admitOk(store, admission("rt", {}, { runtimeSha256: sha }));
      expect((await store.revokeKey("rt"))?.name).toBe("rt");
      expect(await store.revokeKey("rt")).toBeUndefined();
      expect(await store.admit(admission("rt", {}, { runtimeSha256: sha }))).toMatchObject({ ok: false, reason: "revoked" });
      expect(await store.listKeys()).toEqual([]);
    });
  });
}

describe("the Redis store's headroom", () => {
  it("reads without writing: entries out of the window stay until an admission sweeps them", async () => {
    const prefix = testPrefix("headroom-ro");
    prefixes.push(prefix);
    const clock = testClock();
    const store = createRedisTenantStore({ client: redis, prefix, streamLeaseMs: LEASE_MS, usageStreamMaxLen: 1_000, now: clock.now });
    const limits = { requestsPerMinute: 5, tokensPerMinute: 500 };
    const req = admission("k", limits, { reserveTokens: 50 });
    await admitOk(store, req);
    await admitOk(store, admission("k", limits, { reserveTokens: 70 }));
    clock.advance(LEASE_MS + 1);
    const before = await dumpPrefix(prefix);
    expect(await store.headroom("k", limits)).toEqual({ requestsRemaining: 5, tokensRemaining: 500, streamsActive: 0 });
    expect(await dumpPrefix(prefix)).toBe(before);
    // An admission sweeps them, and agrees with what headroom said.
    const next = await admitOk(store, admission("k", limits, { reserveTokens: 10 }));
    expect(next.quota.requests?.remaining).toBe(4);
    expect(next.quota.tokens?.remaining).toBe(490);
    expect(await dumpPrefix(prefix)).not.toBe(before);
  });
});

describe("the Redis store's lease index", () => {
  it("releases a dead replica's reservation after that key's own lease keys expired, at the next admission of any key or heartbeat", async () => {
    const prefix = testPrefix("lease-index");
    prefixes.push(prefix);
    const clock = testClock();
    const store = createRedisTenantStore({ client: redis, prefix, streamLeaseMs: LEASE_MS, usageStreamMaxLen: 1_000, now: clock.now });
    const budget: KeyBudget = { usdMicros: 1_000, period: "month" };
    const rollup = `${prefix}use:{dead}:m2026-05`;
    for (const look of ["admission", "heartbeat"] as const) {
      await admitOk(store, admission("dead", { concurrentStreams: 1 }, { budget, reserveMicros: 800 }));
      expect(Number(await redis.hget(rollup, "reserved"))).toBe(800);
      clock.advance(LEASE_MS + 1);
      // What Redis does to the key's lease keys lease + 1 s after its last admission (PEXPIRE), on its own clock.
      await redis.del([`${prefix}fly:{dead}`, `${prefix}flya:{dead}`]);
      if (look === "admission") await admitOk(store, admission("someone-else", {}));
      else await store.heartbeat([]);
      expect(Number(await redis.hget(rollup, "reserved")), look).toBe(0);
    }
  });
});

describe("the fail-open store's headroom", () => {
  it("is Redis's while it answers, and absent while it is away: never the local fallback's share", async () => {
    const own = await startOwnRedis();
    const client = await storeClient(own.url, 1_000);
    const prefix = testPrefix("headroom-outage");
    const limits = { requestsPerMinute: 10, concurrentStreams: 4 };
    let claimConnected = false;
    try {
      const store = createFailOpenStore({
        shared: createRedisTenantStore({ client, prefix, streamLeaseMs: LEASE_MS, usageStreamMaxLen: 1_000 }),
        local: createMemoryTenantStore({ streamLeaseMs: LEASE_MS }),
        failMode: "open",
        replicas: 2,
        bufferMax: 10,
        timeoutMs: 1_000,
        connected: () => claimConnected || client.status === "ready",
        onEvent: () => undefined,
      });
      await admitOk(store, admission("k", limits));
      expect(await store.headroom("k", limits)).toEqual({ requestsRemaining: 9, streamsActive: 1 });

      await own.kill();
      // Known to be down: Redis is not asked.
      const local = await admitOk(store, admission("k", limits));
      expect(local.shared).toBe(false);
      expect(await store.headroom("k", limits)).toEqual({});
      // Believed up, but the call fails: still no figures, and no error.
      claimConnected = true;
      expect(await store.headroom("k", limits)).toEqual({});
    } finally {
      client.disconnect();
      await own.kill();
    }
  });
});

describe("calendar periods", () => {
  it("are the same in Redis's scripts as in TypeScript, across month ends, leap days, weeks and years", async () => {
    const prefix = testPrefix("periods");
    prefixes.push(prefix);
    const store = createRedisTenantStore({ client: redis, prefix, streamLeaseMs: LEASE_MS, usageStreamMaxLen: 1_000 });
    const moments = [
      Date.UTC(1999, 11, 31, 23, 59, 59, 999),
      Date.UTC(2000, 0, 1),
      Date.UTC(2000, 1, 29, 12),
      Date.UTC(2024, 1, 29, 23, 59),
      Date.UTC(2025, 11, 29),
      Date.UTC(2026, 0, 4, 23, 59, 59, 999),
      Date.UTC(2026, 0, 5),
      Date.UTC(2026, 4, 31, 23, 59, 59, 999),
      Date.UTC(2100, 1, 28, 18),
      Date.UTC(2100, 2, 1),
    ];
    for (let day = 0; day < 800; day += 37) moments.push(Date.UTC(2026, 0, 1) + day * 86_400_000 + 3_600_000);
    for (const at of moments) {
      for (const kind of PERIOD_KINDS) {
        expect((await store.usage("p", kind, at)).periodId, `${kind} ${new Date(at).toISOString()}`).toBe(periodOf(kind, at).id);
      }
    }
  });
});
