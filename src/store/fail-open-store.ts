import type { KeyLimits } from "../config/settings.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import type { UsageRecord } from "../usage/usage-record.js";
import { redisRejection } from "./redis-rejection.js";
import { createRedisWatch } from "./redis-watch.js";
import type { AdmissionRef, AdmitRequest, AdmitResult, Settlement, SettleResult, TenantStore } from "./tenant-store.js";
import { StoreTimeoutError } from "./within.js";

/** What the wrapper reports, for logs and the pipeline observer. */
export type StoreEvent =
  /** Redis is unreachable (a connection error, or silence for `downAfterTimeouts` × `timeoutMs`): everything goes local until it answers again. */
  | { readonly type: "down"; readonly operation: string; readonly cause: string }
  /** Redis answered again after being down. */
  | { readonly type: "up" }
  /** A call passed `timeoutMs` without an answer (reported once until the next answer); it is still waited for. */
  | { readonly type: "slow"; readonly operation: string }
  /**
   * Redis refused a call for good (redis-rejection.ts: CROSSSLOT, NOPERM…):
   * the store cannot do its job as configured. Every such call is reported
   * (`first`: the first since that operation last succeeded).
   */
  | { readonly type: "rejected"; readonly operation: string; readonly code: string; readonly cause: string; readonly first: boolean }
  /** An operation that had been rejected succeeded again (the ACL or the topology was fixed). */
  | { readonly type: "accepted"; readonly operation: string }
  /** Redis answered a call with an error (it is up, but that call is decided by the fail mode); reported once until the next good answer. */
  | { readonly type: "error_reply"; readonly operation: string; readonly cause: string }
  /**
   * The answer to an admission that had timed out came after all:
   * `released` when Redis had granted it (its reservations are given back,
   * the request was decided locally), `refused` when it had not. (A late
   * settlement is reported as `flushed`.)
   */
  | { readonly type: "late"; readonly operation: "admit"; readonly outcome: "released" | "refused" }
  /** One admission or settle served locally instead of by Redis. */
  | { readonly type: "fallback"; readonly operation: "admit" | "settle" }
  /** A buffered record reached Redis. */
  | { readonly type: "flushed"; readonly record: UsageRecord }
  /** The buffer emptied: `count` records reached Redis since it last was empty. */
  | { readonly type: "drained"; readonly count: number }
  /** A record that did not fit in the buffer; `total` counts every drop since start. */
  | { readonly type: "dropped"; readonly record: UsageRecord; readonly total: number }
  /** A release that did not fit in the buffer: Redis frees it when the stream lease runs out. */
  | { readonly type: "release_dropped"; readonly key: string; readonly total: number };

export interface FailOpenStoreOptions {
  /** The shared store (Redis). */
  readonly shared: TenantStore;
  /** This replica's own store, for admissions while the shared one is away. */
  readonly local: TenantStore;
  readonly failMode: "open" | "closed";
  /** Replicas sharing the limits: local limits are the configured ones divided by this. */
  readonly replicas: number;
  /** Settlements (and releases) held while Redis is away; past it they are dropped and counted. */
  readonly bufferMax: number;
  /** A call with no answer this long after it was written is slow: reported, and still waited for (redis-watch.ts). */
  readonly timeoutMs: number;
  /** Redis counts as down after this many `timeoutMs` of silence while calls wait. Default 3. */
  readonly downAfterTimeouts?: number;
  /** Whether the connection is up now (its status is `ready`): when not, nobody waits for a timeout. */
  readonly connected: () => boolean;
  readonly onEvent: (event: StoreEvent) => void;
}

export interface FailOpenStore extends TenantStore {
  /** Settlements and releases waiting for Redis. */
  readonly buffered: number;
  /** The connection is back (its `ready` event): use Redis again at once, and flush. */
  reconnected(): void;
  /** Sends the buffer to Redis now (single flight); resolves when it is empty or Redis failed again. */
  flush(): Promise<void>;
}

/** After Redis is counted down, it is left alone this long (one request per period pays a timeout, not every one). */
const DOWN_MS = 1_000;
/** While work is buffered, a flush is tried this often (and at once on reconnection and after any admission Redis answered). */
const FLUSH_EVERY_MS = 500;
const FLUSH_BATCH = 100;
const DOWN_AFTER_TIMEOUTS = 3;

const causeOf = (error: unknown): string => {
  if (error instanceof Error) return `${error.name}: ${error.message.slice(0, 200)}`;
  return "unknown";
};

/** A limit shared by `replicas` replicas, as one replica's share (at least 1). */
const share = (limit: number | undefined, replicas: number) => (limit === undefined ? undefined : Math.max(1, Math.floor(limit / replicas)));

/** This replica's share of per-minute and concurrency limits while Redis is away. */
function shareLimits(limits: KeyLimits, replicas: number): KeyLimits {
  return {
    ...(limits.requestsPerMinute === undefined ? {} : { requestsPerMinute: share(limits.requestsPerMinute, replicas)! }),
    ...(limits.tokensPerMinute === undefined ? {} : { tokensPerMinute: share(limits.tokensPerMinute, replicas)! }),
    ...(limits.concurrentStreams === undefined ? {} : { concurrentStreams: share(limits.concurrentStreams, replicas)! }),
  };
}

/** Work owed to Redis: a settlement, or the release of an admission decided locally. `done` once Redis has it, by whichever send got there. */
type Pending = ({ readonly kind: "settle"; readonly settlement: Settlement } | { readonly kind: "release"; readonly admission: AdmissionRef }) & { done: boolean; buffered: boolean };

/**
 * The shared store behind a fail mode (docs/tenancy.md, "When Redis is
 * in trouble"). Redis counts as down on a connection error, or once it has
 * been silent for `downAfterTimeouts` × `timeoutMs` while calls waited
 * (redis-watch.ts): a slow answer on a busy replica is waited for and
 * used, never replaced by a local decision on top of Redis's. Calls
 * waiting when Redis is found down are decided without it, but their
 * answers are not thrown away: an admission Redis granted late is released
 * there (the request was decided locally, and must count once), a
 * settlement that arrives late is taken off the buffer.
 *
 * With `open`, a call decided without Redis admits on this replica's own
 * store with every limit divided by `replicas`, and a budget's remaining
 * share (budget − last use seen in Redis) divided the same way;
 * settlements wait in a bounded buffer and are flushed, in order, when
 * Redis answers again (settles are idempotent, so a retried one counts
 * once; a locally admitted stream's settle also reconciles Redis's
 * windows). With `closed`, admissions are refused with UNAVAILABLE
 * instead, and settlements of streams already running are still buffered.
 * Every fallback, timeout, outage, flush and drop is reported.
 */
export function createFailOpenStore(options: FailOpenStoreOptions): FailOpenStore {
  const { local, shared } = options;
  const ms = options.timeoutMs;
  const downAfter = options.downAfterTimeouts ?? DOWN_AFTER_TIMEOUTS;
  const buffer: Pending[] = [];
  let dropped = 0;
  let releasesDropped = 0;
  let downUntil = 0;
  let down = false;
  let failing = false;
  let flushing: Promise<void> | undefined;
  let flushedSinceEmpty = 0;
  let timer: NodeJS.Timeout | undefined;
  /** Budget used (spent + reserved) as Redis last said, per key, until its period ends. */
  const lastUsed = new Map<string, { readonly usedMicros: number; readonly until: number }>();

  /** Operations Redis refused for good (redis-rejection.ts) and that have not succeeded since. */
  const refusedOps = new Set<string>();
  const healthy = () => options.connected() && performance.now() >= downUntil;
  const NOT_CONNECTED = new Error("not connected (reconnecting)");

  /** `backoff`: Redis is reachable but not answering; while disconnected, reconnection decides. */
  const markDown = (operation: string, error: unknown, backoff = true) => {
    if (backoff) downUntil = performance.now() + DOWN_MS;
    if (down) return;
    down = true;
    options.onEvent({ type: "down", operation, cause: causeOf(error) });
  };
  /** Redis answered: it is up, and the backoff after a silence ends with it. */
  const answered = (operation: string) => {
    if (refusedOps.delete(operation)) options.onEvent({ type: "accepted", operation });
    failing = false;
    downUntil = 0;
    if (!down) return;
    down = false;
    options.onEvent({ type: "up" });
  };
  const watch = createRedisWatch({
    timeoutMs: ms,
    downAfterTimeouts: downAfter,
    onSlow: (operation) => options.onEvent({ type: "slow", operation }),
    onSilent: (operation, error) => markDown(operation, error),
  });
  /**
   * A call failed. A timeout here means the connection fell silent (the
   * watch already counted Redis down); a lost connection is an outage at
   * once; an error reply (BUSY, LOADING, OOM…) is Redis answering: that
   * call is decided by the fail mode, and Redis is not called down.
   */
  const failed = (operation: string, error: unknown) => {
    if (error instanceof StoreTimeoutError) return;
    const code = redisRejection(error);
    if (code !== undefined) {
      const first = !refusedOps.has(operation);
      refusedOps.add(operation);
      options.onEvent({ type: "rejected", operation, code, cause: causeOf(error), first });
    }
    if (!options.connected()) {
      markDown(operation, error, false);
      return;
    }
    if (failing) return;
    failing = true;
    options.onEvent({ type: "error_reply", operation, cause: causeOf(error) });
  };

  const schedule = () => {
    if (timer || buffer.length === 0) return;
    timer = setInterval(() => {
      if (buffer.length === 0) {
        clearInterval(timer);
        timer = undefined;
        return;
      }
      if (options.connected()) void flush();
    }, FLUSH_EVERY_MS);
    timer.unref();
  };

  /** Buffers `p` behind what is waiting; false when the buffer is full (the caller reports the drop). */
  const enqueue = (p: Pending): boolean => {
    if (buffer.length >= options.bufferMax) return false;
    p.buffered = true;
    buffer.push(p);
    schedule();
    return true;
  };

  const enqueueSettle = (p: Pending & { kind: "settle" }): SettleResult => {
    if (enqueue(p)) return "buffered";
    dropped++;
    options.onEvent({ type: "dropped", record: p.settlement.record, total: dropped });
    return "dropped";
  };

  /** Redis has `p` now: off the buffer, and reported once. */
  const delivered = (p: Pending) => {
    if (p.done) return;
    p.done = true;
    if (!p.buffered) return;
    const at = buffer.indexOf(p);
    if (at >= 0) buffer.splice(at, 1);
    if (p.kind === "settle") {
      flushedSinceEmpty++;
      options.onEvent({ type: "flushed", record: p.settlement.record });
    }
    reportDrained();
  };

  const reportDrained = () => {
    if (buffer.length === 0 && flushedSinceEmpty > 0) {
      options.onEvent({ type: "drained", count: flushedSinceEmpty });
      flushedSinceEmpty = 0;
    }
  };

  /** Sends `p` to Redis, bounded; its answer, whenever it comes, marks it delivered. */
  const send = (p: Pending): Promise<unknown> => {
    const work: Promise<unknown> = p.kind === "settle" ? shared.settle(p.settlement) : shared.release(p.admission);
    void work.then(
      () => {
        answered("flush");
        delivered(p);
      },
      () => undefined,
    );
    return watch.wait(work, p.kind);
  };

  const drain = async (): Promise<void> => {
    while (buffer.length > 0 && options.connected()) {
      const batch = buffer.slice(0, FLUSH_BATCH);
      // Sent together: they go out back to back on the one connection, without waiting for each answer.
      const results = await Promise.allSettled(batch.map((p) => send(p)));
      const rejected = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
      if (rejected) {
        failed("flush", rejected.reason);
        return;
      }
      answered("flush");
    }
    reportDrained();
  };

  /** One flush at a time; the flag is cleared asynchronously, after the assignment (a drain may finish synchronously). */
  const flush = (): Promise<void> => {
    flushing ??= drain().finally(() => {
      flushing = undefined;
    });
    return flushing;
  };

  const releaseLater = (admission: AdmissionRef) => {
    const p: Pending = { kind: "release", admission, done: false, buffered: false };
    if (!enqueue(p)) {
      releasesDropped++;
      options.onEvent({ type: "release_dropped", key: admission.key, total: releasesDropped });
      return;
    }
    if (options.connected()) void flush();
  };

  /**
   * An admission that timed out still runs in Redis. When its answer comes,
   * what it reserved there is given back: this request was decided
   * locally and counts there, once.
   */
  const settleLate = (req: AdmitRequest, work: Promise<AdmitResult>) => {
    work.then(
      (result) => {
        answered("admit");
        if (result.ok) releaseLater({ key: req.key, admissionId: req.admissionId, ...(req.parents ? { parents: req.parents.map(({ level, id, name }) => ({ level, id, name })) } : {}) });
        options.onEvent({ type: "late", operation: "admit", outcome: result.ok ? "released" : "refused" });
      },
      () => undefined,
    );
  };

  const localAdmit = async (req: AdmitRequest): Promise<AdmitResult> => {
    if (options.failMode === "closed") {
      throw new GatewayError("store_unavailable", "the gateway's shared store is unreachable; retry shortly", { retryAfterMs: DOWN_MS });
    }
    options.onEvent({ type: "fallback", operation: "admit" });
    const limits = shareLimits(req.limits, options.replicas);
    const seen = lastUsed.get(req.key);
    const usedShared = seen && seen.until > Date.now() ? seen.usedMicros : 0;
    const budget = req.budget ? { ...req.budget, usdMicros: Math.floor(Math.max(0, req.budget.usdMicros - usedShared) / options.replicas) } : undefined;
    // A team's or business line's spend is not known here (Redis answers with the key's figures): each replica takes its share of the whole budget.
    const parents = req.parents?.map((p) => ({
      ...p,
      limits: shareLimits(p.limits, options.replicas),
      ...(p.budget ? { budget: { ...p.budget, usdMicros: Math.floor(p.budget.usdMicros / options.replicas) } } : {}),
    }));
    // Runtime keys are known from this replica's copy, and revocation is not checked while Redis is away: the local
    // store holds no runtime keys, and asking it would turn every valid runtime key into an unknown one (401).
    const { runtimeSha256: _sha, settingsVersion: _version, ...unchecked } = req;
    const result = await local.admit({ ...unchecked, limits, ...(budget ? { budget } : {}), ...(parents ? { parents } : {}) });
    return result.ok ? { ...result, shared: false } : { ...result, local: true };
  };

  /**
   * Administrative calls: bounded, no fallback. Their silence counts
   * toward Redis being down like any call's (the watch is the
   * connection's), and an answer says Redis is up again: on a replica
   * taking no streams (not ready while Redis was down) they are what
   * finds Redis back.
   */
  const bounded = <T>(work: Promise<T>, operation: string) =>
    watch.wait(work, operation).then((value) => {
      answered(operation);
      return value;
    }, unavailable);

  return {
    get buffered() {
      return buffer.length;
    },
    reconnected() {
      downUntil = 0;
      void flush();
    },
    flush,

    async admit(req) {
      if (!options.connected()) markDown("admit", NOT_CONNECTED, false);
      if (!healthy()) return localAdmit(req);
      const work = shared.admit(req);
      let result: AdmitResult;
      try {
        result = await watch.wait(work, "admit");
      } catch (error) {
        failed("admit", error);
        settleLate(req, work);
        return localAdmit(req);
      }
      answered("admit");
      if (result.quota.budget) lastUsed.set(req.key, { usedMicros: result.quota.budget.usedMicros, until: Date.now() + result.quota.budget.resetMs });
      if (buffer.length > 0) void flush();
      return result;
    },

    async settle(s) {
      // A locally admitted stream holds local reservations: free them there (the local store holds them); its usage still goes to Redis.
      if (!s.shared) await local.settle({ ...s, shared: true });
      const p = { kind: "settle" as const, settlement: s, done: false, buffered: false };
      if (!options.connected()) markDown("settle", NOT_CONNECTED, false);
      if (!healthy()) {
        options.onEvent({ type: "fallback", operation: "settle" });
        return enqueueSettle(p);
      }
      if (buffer.length > 0) {
        // Behind the work already waiting, in order.
        const result = enqueueSettle(p);
        void flush();
        return result;
      }
      try {
        const result = (await send(p)) as SettleResult;
        answered("settle");
        return result;
      } catch (error) {
        failed("settle", error);
        options.onEvent({ type: "fallback", operation: "settle" });
        if (p.done) return "stored";
        return enqueueSettle(p);
      }
    },

    async release(a) {
      releaseLater(a);
    },

    async heartbeat(ids) {
      // Locally admitted streams hold their slots here; unknown ids are skipped by each store.
      await local.heartbeat(ids);
      if (!healthy()) return;
      try {
        await watch.wait(shared.heartbeat(ids), "heartbeat");
        answered("heartbeat");
      } catch (error) {
        // A stream whose lease runs out while Redis is away loses its slot there, never its settle.
        failed("heartbeat", error);
      }
    },

    usage: (key, kind, atMs) => bounded(shared.usage(key, kind, atMs), "usage"),

    /**
     * Redis's figures, or none while it is away. Not the local store's:
     * those count only this replica's fallback admissions against its
     * share of each limit, and miss every stream Redis admitted, so they
     * would show headroom nobody has. A read that fails does not mark
     * Redis down (admissions decide that, as for the other reads).
     */
    async headroom(key, limits) {
      if (!healthy()) return {};
      return watch.wait(shared.headroom(key, limits), "headroom").catch(() => ({}));
    },

    records: (count) => bounded(shared.records(count), "records"),
    createKey: (key) => bounded(shared.createKey(key), "createKey"),
    revokeKey: (name) => bounded(shared.revokeKey(name), "revokeKey"),
    listKeys: () => bounded(shared.listKeys(), "listKeys"),
    updateKey: (key) => bounded(shared.updateKey(key), "updateKey"),
    putLevel: (kind, level, mode) => bounded(shared.putLevel(kind, level, mode), "putLevel"),
    deleteLevel: (kind, name) => bounded(shared.deleteLevel(kind, name), "deleteLevel"),
    listLevels: (kind) => bounded(shared.listLevels(kind), "listLevels"),
    keysVersion: () => bounded(shared.keysVersion(), "keysVersion"),

    async close() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await flush();
    },
  };
}

/** Administrative reads and writes have no local fallback: they say UNAVAILABLE. */
function unavailable(error: unknown): never {
  const cause = toGatewayError(error);
  if (cause.code !== "internal") throw cause;
  throw new GatewayError("store_unavailable", "the gateway's shared store is unreachable; retry shortly", { cause: error, retryAfterMs: DOWN_MS });
}
