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
  let connected = true;
  const store = createFailOpenStore({
    shared,
    local: createMemoryTenantStore(),
    failMode: "open",
    replicas: 2,
    bufferMax: 100,
    timeoutMs: 5,
    connected: () => connected,
    onEvent: (e) => events.push(e),
    ...extra,
  });
  return {
    store,
    events,
    types: () => events.map((e) => e.type),
    disconnect: () => (connected = false),
  };
}

async function admitted(store: TenantStore, req: AdmitRequest) {
  const result = await store.admit(req);
  if (!result.ok) throw new Error(`refused: ${result.reason}`);
  return result;
}

describe("the fail-open store, with a shared store that answers late", () => {
  it("decides one timed-out admission locally without calling Redis down, and releases it in Redis when the answer comes", async () => {
    const redis = scriptedShared();
    const { store, events, types } = wrap(redis.store);
    redis.hold();
    const req = request();
    const local = await admitted(store, req);
    expect(local.shared).toBe(false);
    expect(types()).toEqual(["timeout", "fallback"]);

    // The answer comes: Redis had admitted it too. It is given back there, so it counts once (locally).
    redis.answerAll();
    await store.flush();
    await waitFor(() => redis.released.length === 1);
    expect(redis.released).toEqual([{ key: "k", admissionId: req.admissionId }]);
    expect(events).toContainEqual({ type: "late", operation: "admit", outcome: "released" });
    expect(await redis.real.headroom("k", { requestsPerMinute: 100 })).toEqual({ requestsRemaining: 100, streamsActive: 0 });

    // Not down: the next admission is Redis's again.
    const next = await admitted(store, request());
    expect(next.shared).toBe(true);
    expect(types()).not.toContain("down");
  });

  it("counts Redis down only after downAfterTimeouts timeouts in a row; an answer in between starts the count again", async () => {
    const redis = scriptedShared();
    const { store, events, types } = wrap(redis.store, { downAfterTimeouts: 3 });
    redis.hold();
    await admitted(store, request());
    await admitted(store, request());
    expect(events.filter((e) => e.type === "timeout").map((e) => e.type === "timeout" && e.consecutive)).toEqual([1, 2]);
    redis.answerAll();
    await admitted(store, request());
    // (The two late admissions are released in Redis: let that finish, or its waits would count too.)
    await waitFor(() => redis.released.length === 2 && store.buffered === 0);
    redis.hold();
    await admitted(store, request());
    await admitted(store, request());
    expect(types()).not.toContain("down");
    await admitted(store, request());
    expect(events.filter((e) => e.type === "down")).toHaveLength(1);
    // Down: Redis is left alone (no call waits for it), admissions are local at once.
    const heldBefore = redis.held().length;
    expect((await admitted(store, request())).shared).toBe(false);
    expect(redis.held()).toHaveLength(heldBefore);
    redis.answerAll();
  });

  it("calls Redis down at once on a connection error", async () => {
    const redis = scriptedShared();
    const { store, events, disconnect } = wrap(redis.store);
    disconnect();
    expect((await admitted(store, request())).shared).toBe(false);
    expect(events[0]).toMatchObject({ type: "down", operation: "admit" });
  });

  it("refuses a timed-out admission when failing closed, and still releases what Redis granted late", async () => {
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
    client.destroy();
    await dropPrefix(prefix);
  });

  it("takes an answer that arrived while the event loop was blocked past the deadline: no timeout, no fallback", async () => {
    const { store, types } = wrap(createRedisTenantStore({ client, prefix, streamLeaseMs: 60_000, usageStreamMaxLen: 1_000 }), { timeoutMs: 50, connected: () => client.isReady });
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
