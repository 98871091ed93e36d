import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFailOpenStore, type FailOpenStoreOptions, type StoreEvent } from "../src/store/fail-open-store.js";
import { createMemoryTenantStore } from "../src/store/memory-tenant-store.js";
import { createRedisTenantStore, type SluiceRedisClient } from "../src/store/redis-tenant-store.js";
import type { AdmissionRef, AdmitRequest, AdmitResult, Settlement, TenantStore } from "../src/store/tenant-store.js";
import { dropPrefix, SHARED_REDIS_URL, storeClient, testPrefix } from "./helpers/redis.js";

/**
 * A shared store whose calls answer only when the test says: a Redis that
 * is slow, answers late, or fails, without any timing in the test.
 */
function scriptedShared() {
  const real = createMemoryTenantStore();
  const calls: Array<{ readonly op: string; answer: () => void; fail: (error: Error) => void }> = [];
  const released: AdmissionRef[] = [];
  let mode: "answer" | "hold" = "answer";
  const call = <T>(op: string, work: () => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const answer = () => void work().then(resolve, reject);
      if (mode === "answer") answer();
      else calls.push({ op, answer, fail: reject });
    });
  const store: TenantStore = {
    ...real,
    admit: (req) => call("admit", () => real.admit(req)),
    settle: (s) => call("settle", () => real.settle(s)),
    release: (a) =>
      call("release", async () => {
        released.push(a);
        await real.release(a);
      }),
  };
  return {
    store,
    real,
    released,
    /** Calls from now on wait until `answerAll`. */
    hold: () => (mode = "hold"),
    /** Answers every held call, in order, and answers at once from now on. */
    answerAll() {
      mode = "answer";
      for (const c of calls.splice(0)) c.answer();
    },
    held: () => calls.map((c) => c.op),
  };
}

let ids = 0;
const request = (limits = { requestsPerMinute: 100 }): AdmitRequest => ({ key: "k", admissionId: `adm-${++ids}`, limits, reserveTokens: 0, reserveMicros: 0 });
const settlementOf = (req: AdmitRequest, result: Extract<AdmitResult, { ok: true }>): Settlement => ({
  admissionId: req.admissionId,
  key: req.key,
  admittedAt: result.admittedAt,
  shared: result.shared,
  reservedTokens: 0,
  reservedMicros: 0,
  record: {
    requestId: `req-${req.admissionId}`,
    key: req.key,
    alias: "a",
    target: "p/m",
    inputTokens: 1,
    outputTokens: 1,
    cachedInputTokens: 0,
    reasoningTokens: 0,
    costMicros: 0,
    estimated: false,
    durationMs: 1,
    outcome: "completed",
    at: 0,
  },
});

function wrap(shared: TenantStore, extra: Partial<FailOpenStoreOptions> = {}) {
  const events: StoreEvent[] = [];
  const watchers = new Set<() => void>();
  let connected = true;
  const store = createFailOpenStore({
    shared,
    local: createMemoryTenantStore(),
    failMode: "open",
    replicas: 2,
    bufferMax: 100,
    timeoutMs: 5,
    downAfterTimeouts: 3,
    connected: () => connected,
    onEvent: (e) => {
      events.push(e);
      for (const w of [...watchers]) w();
    },
    ...extra,
  });
  return {
    store,
    events,
    types: () => events.map((e) => e.type),
    disconnect: () => (connected = false),
    /** Resolves when an event of `type` has been reported (now or later): no timing. */
    reported: (type: StoreEvent["type"]) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (!events.some((e) => e.type === type)) return;
          watchers.delete(check);
          resolve();
        };
        watchers.add(check);
        check();
      }),
  };
}

async function admitted(store: TenantStore, req: AdmitRequest | Promise<AdmitResult>) {
  const result = await ("then" in req ? req : store.admit(req));
  if (!result.ok) throw new Error(`refused: ${result.reason}`);
  return result;
}

describe("the fail-open store's local fallback", () => {
  it("admits a runtime key from the replica's copy (the local store holds no runtime keys), and marks its refusals as the share's", async () => {
    const { store, disconnect } = wrap(scriptedShared().store);
    disconnect();
    const runtime = { ...request(), runtimeSha256: "c".repeat(64), settingsVersion: "7" };
    expect(await admitted(store, runtime)).toMatchObject({ shared: false });
    const budget = { usdMicros: 1_000, period: "month" as const };
    // Two replicas: this one's share is 500.
    const refused = await store.admit({ ...request(), budget, reserveMicros: 600 });
    expect(refused).toMatchObject({ ok: false, reason: "budget", local: true });
  });
});

describe("the fail-open store, with a shared store that answers late", () => {
  it("waits past the deadline for a slow answer and uses it: Redis decides, nothing falls back, nothing is called down", async () => {
    const redis = scriptedShared();
    const { store, types, reported } = wrap(redis.store, { downAfterTimeouts: 1_000 });
    redis.hold();
    const pending = store.admit(request());
    await reported("slow");
    redis.answerAll();
    expect((await admitted(store, pending)).shared).toBe(true);
    expect(types()).toEqual(["slow"]);
  });

  it("calls Redis down after downAfterTimeouts deadlines of silence: every waiting admission is decided locally, and what Redis granted late is released", async () => {
    const redis = scriptedShared();
    const { store, events, types } = wrap(redis.store);
    redis.hold();
    const reqs = [request(), request()];
    const results = await Promise.all(reqs.map((r) => admitted(store, r)));
    expect(results.map((r) => r.shared)).toEqual([false, false]);
    expect(events.filter((e) => e.type === "down")).toHaveLength(1);
    expect(types().filter((t) => t === "fallback")).toHaveLength(2);
    // Down: Redis is left alone (no call waits for it), admissions are local at once.
    const heldBefore = redis.held().length;
    expect((await admitted(store, request())).shared).toBe(false);
    expect(redis.held()).toHaveLength(heldBefore);

    // The answers come: Redis had admitted both too. They are given back there, so each counts once (locally).
    redis.answerAll();
    await waitFor(() => redis.released.length === 2);
    expect(redis.released.map((r) => r.admissionId).sort()).toEqual(reqs.map((r) => r.admissionId).sort());
    expect(events.filter((e) => e.type === "late")).toEqual([
      { type: "late", operation: "admit", outcome: "released" },
      { type: "late", operation: "admit", outcome: "released" },
    ]);
    expect(await redis.real.headroom("k", { requestsPerMinute: 100 })).toEqual({ requestsRemaining: 100, streamsActive: 0 });
  });

  it("calls Redis down at once on a connection error", async () => {
    const redis = scriptedShared();
    const { store, events, disconnect } = wrap(redis.store);
    disconnect();
    expect((await admitted(store, request())).shared).toBe(false);
    expect(events[0]).toMatchObject({ type: "down", operation: "admit" });
  });

  it("decides an admission Redis answered with an error by the fail mode, without calling Redis down", async () => {
    const failing: TenantStore = { ...createMemoryTenantStore(), admit: () => Promise.reject(new Error("BUSY Redis is busy running a script")) };
    const { store, types } = wrap(failing);
    expect((await admitted(store, request())).shared).toBe(false);
    expect((await admitted(store, request())).shared).toBe(false);
    expect(types()).toEqual(["error_reply", "fallback", "fallback"]);
  });

  it("refuses the waiting admissions when failing closed, and still releases what Redis granted late", async () => {
    const redis = scriptedShared();
    const { store } = wrap(redis.store, { failMode: "closed" });
    redis.hold();
    const req = request();
    await expect(store.admit(req)).rejects.toMatchObject({ code: "store_unavailable" });
    redis.answerAll();
    await waitFor(() => redis.released.length === 1);
    expect(redis.released[0]!.admissionId).toBe(req.admissionId);
  });

  it("takes a settlement off the buffer when its late answer stores it, and reports it flushed once", async () => {
    const redis = scriptedShared();
    const { store, events } = wrap(redis.store);
    const req = request();
    const result = await admitted(store, req);
    redis.hold();
    expect(await store.settle(settlementOf(req, result))).toBe("buffered");
    expect(store.buffered).toBe(1);
    redis.answerAll();
    await waitFor(() => store.buffered === 0);
    await store.flush();
    expect(events.filter((e) => e.type === "flushed")).toHaveLength(1);
    expect((await redis.real.records(10)).map((r) => r.requestId)).toEqual([`req-${req.admissionId}`]);
  });
});

/** Polls a condition the store reaches through promise callbacks only (no timers involved): a few turns of the loop. */
async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1_000 && !condition(); i++) await new Promise((resolve) => setImmediate(resolve));
  expect(condition()).toBe(true);
}

describe("the fail-open store on a busy replica (real Redis)", () => {
  let client: SluiceRedisClient;
  const prefix = testPrefix("busy-loop");
  beforeAll(async () => {
    client = await storeClient();
  });
  afterAll(async () => {
    client.disconnect();
    await dropPrefix(prefix);
  });

  it("takes an answer that arrived while the event loop was blocked past the deadline: no timeout, no fallback", async () => {
    const { store, types } = wrap(createRedisTenantStore({ client, prefix, streamLeaseMs: 60_000, usageStreamMaxLen: 1_000 }), { timeoutMs: 50, connected: () => client.status === "ready" });
    const req = request();
    const pending = store.admit(req);
    // node-redis writes the command in the check phase: let it go out.
    await new Promise((resolve) => setImmediate(resolve));
    // Then keep this loop busy (as starting many streams does) until Redis has run the admission, and past the deadline.
    const port = new URL(SHARED_REDIS_URL).port || "6379";
    const host = new URL(SHARED_REDIS_URL).hostname;
    let seen = "0";
    for (let i = 0; i < 200 && seen !== "1"; i++) seen = spawnSync("redis-cli", ["-h", host, "-p", port, "ZCARD", `${prefix}req:{k}`], { encoding: "utf8" }).stdout.trim();
    expect(seen).toBe("1");
    const blockedUntil = performance.now() + 150;
    while (performance.now() < blockedUntil) {
      // busy: the timer's deadline passes while the answer waits in the socket
    }
    const result = await pending;
    expect(result).toMatchObject({ ok: true, shared: true });
    expect(types()).toEqual([]);
  });
});
