import type { KeyLimits } from "../config/config.js";
import { GatewayError, toGatewayError } from "../core/errors.js";
import type { AdmitRequest, AdmitResult, Settlement, SettleResult, TenantStore, UsageRecord } from "./tenant-store.js";
import { within } from "./within.js";

/** What the wrapper reports, for logs and the pipeline observer. */
export type StoreEvent =
  /** Redis failed or timed out: everything goes local until it answers again. */
  | { readonly type: "down"; readonly operation: string; readonly cause: string }
  /** Redis answered again after being down. */
  | { readonly type: "up" }
  /** One admission or settle served locally instead of by Redis. */
  | { readonly type: "fallback"; readonly operation: "admit" | "settle" }
  /** A buffered record reached Redis. */
  | { readonly type: "flushed"; readonly record: UsageRecord }
  /** The buffer emptied: `count` records reached Redis since it last was empty. */
  | { readonly type: "drained"; readonly count: number }
  /** A record that did not fit in the buffer; `total` counts every drop since start. */
  | { readonly type: "dropped"; readonly record: UsageRecord; readonly total: number };

export interface FailOpenStoreOptions {
  /** The shared store (Redis). */
  readonly shared: TenantStore;
  /** This replica's own store, for admissions while the shared one is away. */
  readonly local: TenantStore;
  readonly failMode: "open" | "closed";
  /** Replicas sharing the limits: local limits are the configured ones divided by this. */
  readonly replicas: number;
  /** Settlements held while Redis is away; past it they are dropped and counted. */
  readonly bufferMax: number;
  /** Longest wait for any one Redis call; past it the call counts as failed (its late answer is ignored). */
  readonly timeoutMs: number;
  /** Whether the connection is up now (node-redis isReady): when not, nobody waits for a timeout. */
  readonly connected: () => boolean;
  readonly onEvent: (event: StoreEvent) => void;
}

export interface FailOpenStore extends TenantStore {
  /** Settlements waiting for Redis. */
  readonly buffered: number;
  /** The connection is back (node-redis `ready`): use Redis again at once, and flush. */
  reconnected(): void;
  /** Sends the buffer to Redis now (single flight); resolves when it is empty or Redis failed again. */
  flush(): Promise<void>;
}

/** After a failure, Redis is left alone this long (one request per period pays a timeout, not every one). */
const DOWN_MS = 1_000;
/** While records are buffered, a flush is tried this often (and at once on reconnection and after any admission Redis answered). */
const FLUSH_EVERY_MS = 500;
const FLUSH_BATCH = 100;

const causeOf = (error: unknown): string => {
  if (error instanceof Error) return `${error.name}: ${error.message.slice(0, 200)}`;
  return "unknown";
};

/** A limit shared by `replicas` replicas, as one replica's share (at least 1). */
const share = (limit: number | undefined, replicas: number) => (limit === undefined ? undefined : Math.max(1, Math.floor(limit / replicas)));

/**
 * The shared store behind a fail mode (README, "Tenancy: when Redis is in
 * trouble"). With `open`, a Redis that is down or slow (every call
 * bounded by `timeoutMs`) never blocks a stream: admissions fall
 * back to this replica's own store with every limit divided by
 * `replicas`, and a budget's remaining share (budget − last spend seen in
 * Redis) divided the same way; settlements wait in a bounded buffer and
 * are flushed, in order, when Redis answers again (settles are idempotent,
 * so a retried one counts once). With `closed`, admissions are refused
 * with UNAVAILABLE instead, and settlements of streams already running are
 * still buffered. Every fallback, outage, flush and drop is reported.
 */
export function createFailOpenStore(options: FailOpenStoreOptions): FailOpenStore {
  const { local } = options;
  const ms = options.timeoutMs;
  /** The shared store, every call bounded by the timeout. */
  const shared: TenantStore = {
    admit: (req) => within(options.shared.admit(req), ms, "admit"),
    settle: (s) => within(options.shared.settle(s), ms, "settle"),
    usage: (key, kind, atMs) => within(options.shared.usage(key, kind, atMs), ms, "usage"),
    headroom: (key, limits) => within(options.shared.headroom(key, limits), ms, "headroom"),
    records: (count) => within(options.shared.records(count), ms, "records"),
    createKey: (key) => within(options.shared.createKey(key), ms, "createKey"),
    revokeKey: (name) => within(options.shared.revokeKey(name), ms, "revokeKey"),
    listKeys: () => within(options.shared.listKeys(), ms, "listKeys"),
    keysVersion: () => within(options.shared.keysVersion(), ms, "keysVersion"),
    close: () => options.shared.close(),
  };
  const buffer: Settlement[] = [];
  let dropped = 0;
  let downUntil = 0;
  let down = false;
  let flushing: Promise<void> | undefined;
  let flushedSinceEmpty = 0;
  let timer: NodeJS.Timeout | undefined;
  /** Budget used (spent + reserved) as Redis last said, per key, until its period ends. */
  const lastUsed = new Map<string, { readonly usedMicros: number; readonly until: number }>();

  const healthy = () => options.connected() && performance.now() >= downUntil;
  const NOT_CONNECTED = new Error("not connected (reconnecting)");

  /** `backoff`: Redis answered badly while connected (a timeout); while disconnected, reconnection decides. */
  const markDown = (operation: string, error: unknown, backoff = true) => {
    if (backoff) downUntil = performance.now() + DOWN_MS;
    if (down) return;
    down = true;
    options.onEvent({ type: "down", operation, cause: causeOf(error) });
  };
  const markUp = () => {
    if (!down) return;
    down = false;
    options.onEvent({ type: "up" });
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

  const enqueue = (s: Settlement): SettleResult => {
    if (buffer.length >= options.bufferMax) {
      dropped++;
      options.onEvent({ type: "dropped", record: s.record, total: dropped });
      return "dropped";
    }
    buffer.push(s);
    schedule();
    return "buffered";
  };

  const drain = async (): Promise<void> => {
    while (buffer.length > 0 && options.connected()) {
      const batch = buffer.splice(0, FLUSH_BATCH);
      // Sent together: node-redis pipelines them on its one connection.
      const results = await Promise.allSettled(batch.map((s) => shared.settle(s)));
      const failed = batch.filter((_, i) => results[i]!.status === "rejected");
      batch.forEach((s, i) => {
        if (results[i]!.status !== "fulfilled") return;
        flushedSinceEmpty++;
        options.onEvent({ type: "flushed", record: s.record });
      });
      if (failed.length > 0) {
        buffer.unshift(...failed);
        const reason = results.find((r): r is PromiseRejectedResult => r.status === "rejected")!.reason as unknown;
        markDown("flush", reason);
        return;
      }
      markUp();
    }
    if (buffer.length === 0 && flushedSinceEmpty > 0) {
      options.onEvent({ type: "drained", count: flushedSinceEmpty });
      flushedSinceEmpty = 0;
    }
  };

  /** One flush at a time; the flag is cleared asynchronously, after the assignment (a drain may finish synchronously). */
  const flush = (): Promise<void> => {
    flushing ??= drain().finally(() => {
      flushing = undefined;
    });
    return flushing;
  };

  const localAdmit = async (req: AdmitRequest): Promise<AdmitResult> => {
    if (options.failMode === "closed") {
      throw new GatewayError("store_unavailable", "the gateway's shared store is unreachable; retry shortly", { retryAfterMs: DOWN_MS });
    }
    options.onEvent({ type: "fallback", operation: "admit" });
    const limits: KeyLimits = {
      ...(req.limits.requestsPerMinute === undefined ? {} : { requestsPerMinute: share(req.limits.requestsPerMinute, options.replicas)! }),
      ...(req.limits.tokensPerMinute === undefined ? {} : { tokensPerMinute: share(req.limits.tokensPerMinute, options.replicas)! }),
      ...(req.limits.concurrentStreams === undefined ? {} : { concurrentStreams: share(req.limits.concurrentStreams, options.replicas)! }),
    };
    const seen = lastUsed.get(req.key);
    const usedShared = seen && seen.until > Date.now() ? seen.usedMicros : 0;
    const budget = req.budget ? { ...req.budget, usdMicros: Math.floor(Math.max(0, req.budget.usdMicros - usedShared) / options.replicas) } : undefined;
    const result = await local.admit({ ...req, limits, ...(budget ? { budget } : {}) });
    return result.ok ? { ...result, shared: false } : result;
  };

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
      let result: AdmitResult;
      try {
        result = await shared.admit(req);
      } catch (error) {
        markDown("admit", error);
        return localAdmit(req);
      }
      markUp();
      if (result.quota.budget) lastUsed.set(req.key, { usedMicros: result.quota.budget.usedMicros, until: Date.now() + result.quota.budget.resetMs });
      if (buffer.length > 0) void flush();
      return result;
    },

    async settle(s) {
      // A locally admitted stream holds local reservations: free them here; its usage still goes to Redis.
      if (!s.shared) await local.settle(s);
      if (!options.connected()) markDown("settle", NOT_CONNECTED, false);
      if (!healthy()) {
        options.onEvent({ type: "fallback", operation: "settle" });
        return enqueue(s);
      }
      if (buffer.length > 0) {
        // Behind the records already waiting, in order.
        const result = enqueue(s);
        void flush();
        return result;
      }
      try {
        const result = await shared.settle(s);
        markUp();
        return result;
      } catch (error) {
        markDown("settle", error);
        options.onEvent({ type: "fallback", operation: "settle" });
        return enqueue(s);
      }
    },

    usage: (key, kind, atMs) => shared.usage(key, kind, atMs).catch(unavailable),

    /**
     * Redis's figures, or none while it is away. Not the local store's:
     * those count only this replica's fallback admissions against its
     * share of each limit, and miss every stream Redis admitted, so they
     * would show headroom nobody has. A read that fails does not mark
     * Redis down (admissions decide that, as for the other reads).
     */
    async headroom(key, limits) {
      if (!healthy()) return {};
      return shared.headroom(key, limits).catch(() => ({}));
    },

    records: (count) => shared.records(count).catch(unavailable),
    createKey: (key) => shared.createKey(key).catch(unavailable),
    revokeKey: (name) => shared.revokeKey(name).catch(unavailable),
    listKeys: () => shared.listKeys().catch(unavailable),
    keysVersion: () => shared.keysVersion().catch(unavailable),

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
