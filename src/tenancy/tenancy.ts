import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Config, KeyBudget } from "../config/config.js";
import { GatewayError } from "../core/errors.js";
import { systemTimers, type Timers } from "../core/timers.js";
import type { TenancyObserver } from "../flow/observer.js";
import type { Logger } from "../logging/logger.js";
import { createFailOpenStore, type StoreEvent } from "../store/fail-open-store.js";
import { createMemoryTenantStore, DEFAULT_LEASE_MS } from "../store/memory-tenant-store.js";
import { redisRejection } from "../store/redis-rejection.js";
import { createRedisTenantStore, createStoreClient, type SluiceRedisClient } from "../store/redis-tenant-store.js";
import { checkStoreAtStart, probeStore } from "../store/store-check.js";
import { type SettleResult, subjectOf, type TenantLevel, type TenantStore } from "../store/tenant-store.js";
import { within } from "../store/within.js";
import type { UsageRecord } from "../usage/usage-record.js";
import { createAlertWebhook } from "./alert-webhook.js";
import { AuthError, authenticate, keyByHash } from "./authenticate.js";
import { createBudgetAlerts } from "./budget-alerts.js";
import { configHierarchy, type Hierarchy } from "./hierarchy.js";
import { createKeyAdmin, type KeyAdmin } from "./key-admin.js";
import { createKeyRegistry, type KeyRegistry } from "./key-registry.js";
import { createLeaseHeartbeat } from "./lease-heartbeat.js";
import { carryNamedRollups } from "./named-state.js";
import { keyId, type ModelViewer, mayUse, type Principal } from "./principal.js";
import { usdFromMicros } from "./quota-headers.js";
import { type ChargeDeps, type ChargeInput, type LevelIdentity, NO_CHARGE, openCharge, type TenantCharge } from "./tenant-charge.js";

export interface TenancyOptions {
  /** The configuration in force (read per request, so a reload applies to the next one). */
  readonly config: () => Config;
  readonly logger: Logger;
  readonly observer?: TenancyObserver;
  /** Tests only: the store's clock (epoch ms) instead of Redis's or the process's. */
  readonly storeClock?: () => number;
  /** This gateway's name on usage records (replicaName()). */
  readonly replica?: string;
  /** The heartbeat's clock and timer (tests move them instead of sleeping). */
  readonly timers?: Timers;
}

/**
 * Virtual keys, limits, budgets and usage (docs/tenancy.md): what the
 * edges ask (who is this request?), what the pipeline's admission stage
 * opens per request, what the admin service manages, over one store.
 */
export interface Tenancy {
  /** The principal of a request's `authorization` header; undefined while authentication is off. Throws `unauthenticated`. */
  identify(authorization: string | undefined, edge: string, remote?: string): Promise<Principal | undefined>;
  /**
   * Who a model listing is for: the request's key as `identify` finds it,
   * or the admin key, which sees every alias (the console signed in as admin
   * lists aliases with it). The admin key is no virtual key for anything
   * else: it streams nothing. Throws `unauthenticated` as `identify` does.
   */
  viewer(authorization: string | undefined, edge: string, remote?: string): Promise<ModelViewer>;
  /** The key with this SHA-256 as configured now, for work it queued that runs later (a batch's lines); undefined when it is gone. */
  keyByHash(sha256: string): Principal | undefined;
  /** The ids of the keys (configured or runtime) that bear `name` now: what an admin call naming a key acts on. */
  keyIdsNamed(name: string): string[];
  /** The admission stage of one request (a no-op without a principal); throws `permission_denied` for an alias the key may not use. */
  charge(principal: Principal | undefined, input: Omit<ChargeInput, "principal">): TenantCharge;
  /**
   * What `charge` opens a request's charge with, as configured now (the
   * store, the hierarchy, the settle hand-over, budget alerts): for other
   * charged calls (an MCP tool call, mcp/accounting/) that count against
   * the same limits and budgets and land in the same ledger.
   */
  chargeDeps(): ChargeDeps;
  /** The tag keys kept for cost allocation, from the configuration in force. */
  tagKeys(): ReadonlySet<string>;
  /**
   * The teams and business lines in force, as a request is identified: the
   * configuration's, then those created at run time (this replica's copy,
   * as `identify` reads keys). What the MCP gateway reads a caller's
   * team's and business line's grants from (mcp/grants.ts).
   */
  hierarchy(): Hierarchy;
  readonly admin: KeyAdmin;
  readonly store: TenantStore;
  /**
   * False while every keyed request would be refused for want of the store:
   * a fail-closed Redis that is not connected (at start, or after losing the
   * connection), or connected but counted down (silent past
   * `downAfterTimeouts × timeoutMs`, e.g. a frozen process whose TCP
   * connection stays open) until it answers again. Always true otherwise.
   * Readiness follows it.
   */
  readonly ready: boolean;
  /**
   * The shared store's Redis connection and key prefix, when one is
   * configured: other state every replica must see (the facade's replay
   * entries) rides on it instead of opening connections of its own.
   */
  readonly redis?: { readonly client: SluiceRedisClient; readonly prefix: string; readonly timeoutMs: number };
  /** Calls `listener` whenever `ready` changes; returns the unsubscribe. */
  onReadyChange(listener: (ready: boolean) => void): () => void;
  /**
   * Operations Redis refuses for good (redis-rejection.ts), with the
   * reply's code: `probe` (the check at each connection), `admit`,
   * `settle`… Empty while the store does its job. Readiness is held while
   * any is listed: a store that cannot admit must not stay in rotation
   * quietly serving per-replica limits.
   */
  readonly rejected: Readonly<Record<string, string>>;
  /** Calls `listener` whenever `rejected` changes; returns the unsubscribe. */
  onRejectedChange(listener: () => void): () => void;
  /**
   * The start-time check (store-check.ts): the configured topology is
   * the server's and the probe runs. Rejects with StoreRejectedError when
   * the store cannot work as configured; resolves when it can, or when
   * Redis is not reachable in time. Without Redis, resolves at once.
   */
  checkAtStart(): Promise<void>;
  /** Waits up to `graceMs` for settles in flight and buffered usage to reach the store, then disconnects. */
  close(graceMs?: number): Promise<void>;
}

const describe = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message.slice(0, 200)}` : "unknown");

/** Where Redis is, for logs: host and port only (a URL may carry a password). */
function redisHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "(invalid url)";
  }
}

/**
 * A name for one gateway, as usage records and the ledger name the replica
 * that served a call: host and process, and a suffix so that two gateways
 * in one process (tests) are two replicas too.
 */
export function replicaName(): string {
  return `${hostname()}/${process.pid}/${randomBytes(3).toString("hex")}`;
}

/** Alerts this replica claimed, without a shared store: the process is the only replica. */
function memoryClaims(): (id: string, ttlMs: number) => Promise<boolean> {
  const claimed = new Map<string, number>();
  return async (id, ttlMs) => {
    const now = Date.now();
    if (claimed.size > 10_000) for (const [k, until] of claimed) if (until <= now) claimed.delete(k);
    if ((claimed.get(id) ?? 0) > now) return false;
    claimed.set(id, now + ttlMs);
    return true;
  };
}

const budgetIndexes = new WeakMap<Config["auth"]["keys"], ReadonlyMap<string, KeyBudget | undefined>>();

/**
 * A level's budget now: a configured or runtime key's, a team's, a
 * business line's. Found by name, then its id checked: a level of that
 * name created since is another, and its budget not this one's.
 */
function budgetOf(config: Config, registry: KeyRegistry, level: TenantLevel, ref: LevelIdentity): KeyBudget | undefined {
  const { id, name } = ref;
  if (level === "team") {
    const team = configHierarchy(config, registry).team(name);
    return team?.id === id ? team.budget : undefined;
  }
  if (level === "business_line") {
    const line = configHierarchy(config, registry).businessLine(name);
    return line?.id === id ? line.budget : undefined;
  }
  let index = budgetIndexes.get(config.auth.keys);
  if (!index) {
    index = new Map(config.auth.keys.map((k) => [keyId(k.sha256), k.budget]));
    budgetIndexes.set(config.auth.keys, index);
  }
  return index.has(id) ? index.get(id) : registry.all().find((k) => k.id === id)?.budget;
}

/** Every key's and level's subject before ids (its name) → its subject now (its id), for carrying state kept under names. */
function legacySubjects(config: Config, registry: KeyRegistry): Map<string, string> {
  const subjects = new Map<string, string>();
  for (const key of config.auth.keys) subjects.set(key.name, subjectOf({ level: "key", id: keyId(key.sha256) }));
  for (const key of registry.all()) if (!subjects.has(key.name)) subjects.set(key.name, subjectOf({ level: "key", id: key.id }));
  const hierarchy = configHierarchy(config, registry);
  for (const name of new Set([...config.auth.teams.keys(), ...registry.teams().map((t) => t.name)])) subjects.set(`~team:${name}`, subjectOf({ level: "team", id: hierarchy.team(name)!.id }));
  for (const name of new Set([...config.auth.businessLines.keys(), ...registry.businessLines().map((l) => l.name)])) subjects.set(`~bl:${name}`, subjectOf({ level: "business_line", id: hierarchy.businessLine(name)!.id }));
  return subjects;
}

/** The principal with its team's id as the team is now (a team created again under its name is another team). */
function withTeamId(principal: Principal, config: Config, registry: KeyRegistry): Principal {
  if (principal.team === undefined) return principal;
  const teamId = configHierarchy(config, registry).team(principal.team)?.id;
  return teamId === undefined ? principal : { ...principal, teamId };
}

/** Drops are logged at the first of an outage and then every LOG_DROPS_EVERY-th, with the running total. */
const LOG_DROPS_EVERY = 1_000;

export function createTenancy(options: TenancyOptions): Tenancy {
  const { logger, observer } = options;
  const startConfig = options.config();
  const inFlight = new Set<Promise<unknown>>();
  let fallbacks = { admit: 0, settle: 0 };
  let store: TenantStore;
  let disconnect: () => void = () => undefined;
  let flushAndClose: () => Promise<number> = async () => 0;
  let ready = true;
  let redis: Tenancy["redis"];
  const readyListeners = new Set<(ready: boolean) => void>();
  const setReady = (value: boolean) => {
    if (value === ready) return;
    ready = value;
    for (const listener of [...readyListeners]) listener(value);
  };
  const rejected: Record<string, string> = {};
  const rejectedListeners = new Set<() => void>();
  const setRejected = (operation: string, code: string | undefined) => {
    if (rejected[operation] === code) return;
    if (code === undefined) delete rejected[operation];
    else rejected[operation] = code;
    for (const listener of [...rejectedListeners]) listener();
  };
  let checkAtStart: () => Promise<void> = async () => undefined;
  /** Whether the fail-open wrapper counts Redis down (silent, or disconnected) now. */
  let storeDown = false;
  /** Fail-closed only: how readiness is worked out again (connection and answers); a no-op otherwise. */
  let followStore: () => void = () => undefined;

  const onStoreEvent = (event: StoreEvent) => {
    switch (event.type) {
      case "down":
        logger.warn({ event: "store.down", operation: event.operation, cause: event.cause });
        observer?.storeState?.({ up: false, cause: event.cause });
        storeDown = true;
        followStore();
        break;
      case "up":
        logger.info({ event: "store.up", fallbackAdmissions: fallbacks.admit, fallbackSettles: fallbacks.settle });
        fallbacks = { admit: 0, settle: 0 };
        observer?.storeState?.({ up: true });
        storeDown = false;
        followStore();
        break;
      case "slow":
        // A slow answer is waited for, not an outage (a busy replica or a loaded Redis): one line per run of them.
        logger.warn({ event: "store.slow", operation: event.operation, timeoutMs: startConfig.store?.redis?.timeoutMs });
        break;
      case "rejected":
        observer?.storeRejected?.({ operation: event.operation, code: event.code });
        if (event.first) logger.error({ event: "store.rejected", operation: event.operation, code: event.code, cause: event.cause });
        setRejected(event.operation, event.code);
        break;
      case "accepted":
        logger.info({ event: "store.accepted", operation: event.operation });
        setRejected(event.operation, undefined);
        break;
      case "error_reply":
        logger.warn({ event: "store.error_reply", operation: event.operation, cause: event.cause });
        break;
      case "late":
        logger.debug({ event: "store.late_answer", operation: event.operation, outcome: event.outcome });
        break;
      case "release_dropped":
        if (event.total === 1 || event.total % LOG_DROPS_EVERY === 0) logger.error({ event: "store.release_dropped", key: event.key, droppedTotal: event.total });
        break;
      case "fallback":
        fallbacks[event.operation]++;
        observer?.storeFallback?.({ operation: event.operation });
        break;
      case "flushed":
        observer?.usageRecorded?.({ record: event.record, result: "flushed" });
        break;
      case "drained":
        logger.info({ event: "usage.flushed", records: event.count });
        break;
      case "dropped":
        if (event.total === 1 || event.total % LOG_DROPS_EVERY === 0) {
          logger.error({ event: "usage.dropped", requestId: event.record.requestId, key: event.record.key, droppedTotal: event.total });
        }
        // Observers hear of it once, from the settle that returns "dropped".
        break;
    }
  };

  // Budget alerts hear every settle's spend; the store they claim an alert in is set below with the store.
  let claim: (id: string, ttlMs: number) => Promise<boolean> = memoryClaims();
  const webhookSettings = startConfig.alerts.webhook;
  const webhook = webhookSettings
    ? createAlertWebhook(webhookSettings, (event) => {
        if (event.type === "delivered") observer?.alertDelivery?.({ result: "delivered" });
        else if (event.type === "retrying") {
          observer?.alertDelivery?.({ result: "retried" });
          logger.warn({ event: "alert.retrying", alertId: event.alert.id, attempt: event.attempt, cause: event.cause });
        } else {
          observer?.alertDelivery?.({ result: "dropped" });
          logger.error({ event: "alert.dropped", alertId: event.alert.id, reason: event.reason });
        }
      })
    : undefined;
  const alerts = createBudgetAlerts({
    thresholds: () => options.config().alerts.thresholds,
    budgetOf: (level, ref) => budgetOf(options.config(), registry, level, ref),
    claim: (id, ttlMs) => claim(id, ttlMs),
    announce: (alert) => {
      logger.warn({
        event: "budget.alert",
        level: alert.level,
        name: alert.name,
        threshold: alert.threshold,
        period: alert.period,
        ...(alert.spentMicros === undefined ? {} : { spentUsd: usdFromMicros(alert.spentMicros) }),
        budgetUsd: usdFromMicros(alert.budgetMicros),
      });
      observer?.budgetAlert?.({
        level: alert.level,
        id: alert.levelId,
        name: alert.name,
        threshold: alert.threshold,
        period: alert.period,
        periodId: alert.periodId,
        budgetMicros: alert.budgetMicros,
        ...(alert.spentMicros === undefined ? {} : { spentMicros: alert.spentMicros }),
      });
      webhook?.send(alert);
    },
  });

  const onSpend = alerts.onSpend;
  const redisConfig = startConfig.store?.redis;
  if (!redisConfig) {
    store = createMemoryTenantStore({ ...(options.storeClock ? { now: options.storeClock } : {}), onSpend });
  } else {
    const client = createStoreClient(redisConfig);
    const host = redisHost(redisConfig.url);
    let errorLogged = false;
    client.on("error", (error: unknown) => {
      // ioredis reports every failed reconnection; one line per outage is enough.
      if (errorLogged) return;
      errorLogged = true;
      logger.warn({ event: "store.error", redis: host, cause: describe(error) });
    });
    const clock = options.storeClock ? { now: options.storeClock } : {};
    const wrapper = createFailOpenStore({
      shared: createRedisTenantStore({ client, prefix: redisConfig.prefix, streamLeaseMs: redisConfig.streamLeaseMs, usageStreamMaxLen: redisConfig.usageStreamMaxLen, onSpend, ...clock }),
      local: createMemoryTenantStore({ streamLeaseMs: redisConfig.streamLeaseMs, maxRecords: 0, ...clock }),
      failMode: redisConfig.failMode,
      replicas: redisConfig.replicas,
      bufferMax: redisConfig.bufferMax,
      timeoutMs: redisConfig.timeoutMs,
      downAfterTimeouts: redisConfig.downAfterTimeouts,
      connected: () => client.status === "ready",
      onEvent: onStoreEvent,
    });
    const probeTimeoutMs = Math.max(2_000, redisConfig.timeoutMs * 8);
    client.on("ready", () => {
      // Each connection (a restart, a failover, an ACL change) is probed again: a rejection holds readiness, a pass lifts it.
      probeStore(client, redisConfig.prefix, probeTimeoutMs).then(
        () => setRejected("probe", undefined),
        (error: unknown) => {
          const code = redisRejection(error);
          if (code === undefined) return;
          observer?.storeRejected?.({ operation: "probe", code });
          if (rejected.probe === undefined) logger.error({ event: "store.rejected", operation: "probe", code, cause: describe(error) });
          setRejected("probe", code);
        },
      );
      errorLogged = false;
      // Connecting means Redis answered its handshake: it is not silent any more.
      storeDown = false;
      logger.info({ event: "store.connected", redis: host, prefix: redisConfig.prefix });
      wrapper.reconnected();
    });
    if (redisConfig.failMode === "closed") {
      ready = false;
      // Connected is not enough: a frozen Redis keeps its connection open while every admission is refused.
      followStore = () => setReady(client.status === "ready" && !storeDown);
      for (const event of ["ready", "end", "error", "close", "reconnecting"]) client.on(event, followStore);
    }
    // Not awaited: a gateway starts (and, failing open, serves) while Redis is away.
    client.connect().catch(() => undefined);
    store = wrapper;
    redis = { client, prefix: redisConfig.prefix, timeoutMs: redisConfig.timeoutMs };
    checkAtStart = async () => {
      const outcome = await checkStoreAtStart({ topology: redisConfig, prefix: redisConfig.prefix, client, timeoutMs: probeTimeoutMs });
      logger.info({ event: "store.checked", redis: host, outcome, topology: redisConfig.cluster ? "cluster" : "standalone" });
    };
    // One replica announces each crossing: the first to set its marker, which lives until the period is over.
    claim = async (id, ttlMs) => (await within(client.set(`${redisConfig.prefix}alert:${id}`, "1", "PX", ttlMs, "NX"), Math.max(1_000, redisConfig.timeoutMs * 4), "alert claim")) === "OK";
    flushAndClose = async () => {
      await wrapper.close();
      return wrapper.buffered;
    };
    disconnect = () => client.disconnect();
  }

  const registry = createKeyRegistry({
    store,
    poll: redisConfig !== undefined,
    onError: () => undefined, // the store reports its own trouble
  });

  // Renews this replica's running streams' leases and releases those that ran out anywhere.
  const timers = options.timers ?? systemTimers;
  const leases = createLeaseHeartbeat({ store, leaseMs: redisConfig?.streamLeaseMs ?? DEFAULT_LEASE_MS, timers });

  if (redis) {
    // State kept under names by versions before ids goes to the ids of the keys and levels that bear those names (named-state.ts): once, at the first connection that can do it.
    const shared = redis;
    let carrying = false;
    let carried = false;
    const carry = async () => {
      if (carried || carrying) return;
      carrying = true;
      try {
        await registry.refresh();
        const count = await carryNamedRollups({ ...shared, subjects: legacySubjects(options.config(), registry) });
        carried = true;
        if (count > 0) logger.info({ event: "tenancy.named_state_carried", rollups: count });
      } catch (error) {
        logger.warn({ event: "tenancy.named_state_carry_failed", cause: describe(error) });
      } finally {
        carrying = false;
      }
    };
    shared.client.on("ready", () => void carry());
  }

  const settled = (work: Promise<{ readonly record: UsageRecord; readonly result: SettleResult }>, requestId: string) => {
    const tracked = work.then(
      ({ record, result }) => {
        logger.debug({ event: "usage.recorded", requestId, key: record.key, result, inputTokens: record.inputTokens, outputTokens: record.outputTokens, costMicros: record.costMicros, estimated: record.estimated });
        observer?.usageRecorded?.({ record, result });
      },
      (error: unknown) => logger.error({ event: "usage.settle_failed", requestId, cause: describe(error) }),
    );
    inFlight.add(tracked);
    void tracked.finally(() => inFlight.delete(tracked));
  };

  const admin = createKeyAdmin({ config: options.config, store, registry });
  const isAdminKey = (authorization: string | undefined) => {
    try {
      admin.authorize(authorization);
      return true;
    } catch {
      return false;
    }
  };

  /** What a charge is opened with, from the configuration in force: the model pipeline's charges and the MCP gateway's tool calls (mcp/accounting/) share it. */
  const chargeDeps = (): ChargeDeps => {
    const config = options.config();
    return {
      store,
      settled,
      budgetExceededStatus: config.auth.budgetExceededStatus,
      hierarchy: configHierarchy(config, registry),
      ...(options.replica ? { replica: options.replica } : {}),
      budgetFull: (level, ref) => alerts.refused(level, ref, Date.now()),
      ...(observer ? { observer } : {}),
      leases,
      now: timers.now,
      ...(redisConfig
        ? {
            settingsVersion: registry.version,
            reread: async (sha256: string) => {
              await registry.catchUp();
              if (registry.unreadable()) throw new GatewayError("store_unavailable", "the gateway's shared store is unreachable; retry shortly", { retryAfterMs: 1_000 });
              return keyByHash(sha256, options.config(), registry);
            },
          }
        : {}),
    };
  };

  const tenancy: Tenancy = {
    async identify(authorization, edge, remote) {
      const config = options.config();
      if (!config.auth.required) return undefined;
      try {
        const principal = withTeamId(await authenticate(authorization, config, registry), config, registry);
        observer?.authenticated?.({ edge, key: principal.name });
        return principal;
      } catch (error) {
        if (error instanceof AuthError) observer?.authenticated?.({ edge, failure: error.failure, ...(remote ? { remote } : {}) });
        throw error;
      }
    },
    async viewer(authorization, edge, remote) {
      if (isAdminKey(authorization)) return { sees: () => true };
      const principal = await tenancy.identify(authorization, edge, remote);
      return { ...(principal ? { principal } : {}), sees: (alias) => mayUse(principal, alias) };
    },
    keyByHash: (sha256) => {
      const config = options.config();
      const principal = keyByHash(sha256, config, registry);
      return principal && withTeamId(principal, config, registry);
    },
    hierarchy: () => configHierarchy(options.config(), registry),
    keyIdsNamed: (name) => [
      ...options
        .config()
        .auth.keys.filter((k) => k.name === name)
        .map((k) => keyId(k.sha256)),
      ...registry
        .all()
        .filter((k) => k.name === name)
        .map((k) => k.id),
    ],
    charge(principal, input) {
      if (!principal) return NO_CHARGE;
      return openCharge(chargeDeps(), { ...input, principal });
    },
    chargeDeps,
    tagKeys: () => options.config().auth.tagKeys,
    admin,
    store,
    ...(redis ? { redis } : {}),
    get ready() {
      return ready;
    },
    onReadyChange(listener) {
      readyListeners.add(listener);
      return () => readyListeners.delete(listener);
    },
    get rejected() {
      return { ...rejected };
    },
    onRejectedChange(listener) {
      rejectedListeners.add(listener);
      return () => rejectedListeners.delete(listener);
    },
    checkAtStart: () => checkAtStart(),
    async close(graceMs = 2_000) {
      registry.close();
      leases.close();
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<"late">((resolve) => (timer = setTimeout(resolve, graceMs, "late")));
      const done = (async () => {
        await Promise.allSettled([...inFlight]);
        return flushAndClose();
      })();
      const outcome = await Promise.race([done, deadline]);
      clearTimeout(timer);
      await webhook?.close(Math.min(graceMs, 1_000));
      const unflushed = outcome === "late" ? -1 : outcome;
      if (unflushed !== 0) logger.error({ event: "usage.unflushed", records: unflushed === -1 ? "unknown (flush timed out)" : unflushed });
      disconnect();
    },
  };
  return tenancy;
}
