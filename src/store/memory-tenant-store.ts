import type { BudgetPeriod, KeyBudget, KeyLimits } from "../config/config.js";
import { PERIOD_KINDS, periodOf, ROLLUP_TTL_MS } from "../usage/periods.js";
import type { UsageRecord } from "../usage/usage-record.js";
import {
  type AdmitRequest,
  type AdmitResult,
  type Headroom,
  type LevelKind,
  type LevelRef,
  type LevelSpend,
  type LimitReason,
  MAX_LEVELS,
  MAX_RUNTIME_KEYS,
  type Quota,
  type Settlement,
  type SettleResult,
  type SpendListener,
  STREAMS_RETRY_MS,
  type StoredKey,
  type StoredLevel,
  subjectOf,
  type TenantStore,
  type UsageTotals,
  WINDOW_MS,
} from "./tenant-store.js";

export interface MemoryTenantStoreOptions {
  /** Epoch milliseconds; tests move it instead of sleeping. */
  readonly now?: () => number;
  /** A stream's slot and budget reservation are released after this even if it never settles. */
  readonly streamLeaseMs?: number;
  /** Usage records kept (the oldest go first). */
  readonly maxRecords?: number;
  /** Told each level's spend after every settle that cost something. */
  readonly onSpend?: SpendListener;
}

/** How long a settled admission is remembered, so a repeated settle (a retried flush) counts once. */
export const SETTLED_MEMORY_MS = 3_600_000;
/** A stream's lease when none is given: what `store.redis.streamLeaseMs` defaults to. */
export const DEFAULT_LEASE_MS = 900_000;

interface Entry {
  readonly at: number;
  amount: number;
}

interface InFlight {
  readonly expiresAt: number;
  readonly micros: number;
  /** The budget period the reservation was counted in; undefined without a budget. */
  readonly periodId?: string;
}

interface KeyState {
  /** admission id → time; insertion order is time order. */
  readonly requests: Map<string, number>;
  readonly tokens: Map<string, Entry>;
  tokenSum: number;
  /** admission id → lease; insertion order is lease order (one lease length per store). */
  readonly inFlight: Map<string, InFlight>;
}

interface Rollup {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  reasoningTokens: number;
  spendMicros: number;
  estimatedRequests: number;
  reservedMicros: number;
  readonly expiresAt: number;
}

const emptyRollup = (expiresAt: number): Rollup => ({
  requests: 0,
  inputTokens: 0,
  outputTokens: 0,
  cachedInputTokens: 0,
  reasoningTokens: 0,
  spendMicros: 0,
  estimatedRequests: 0,
  reservedMicros: 0,
  expiresAt,
});

/** One level of an admission: the key (no `level`) or a team or business line above it. */
interface Level {
  readonly subject: string;
  readonly level?: LevelRef["level"];
  readonly limits: KeyLimits;
  readonly budget?: KeyBudget;
}

/** Oldest token entries walked to tell a refused request when enough will have expired. */
const RETRY_WALK = 1_000;

/**
 * The in-process tenant store: the same semantics as the Redis store (same
 * sliding windows, leases, periods and idempotent settles), for a single
 * replica, and as each replica's local fallback while Redis is away. All
 * state is bounded: windows hold at most a minute of admissions, leases
 * expire, rollups and settle markers expire, records are capped.
 */
export function createMemoryTenantStore(options: MemoryTenantStoreOptions = {}): TenantStore {
  const now = options.now ?? Date.now;
  const leaseMs = options.streamLeaseMs ?? DEFAULT_LEASE_MS;
  const maxRecords = options.maxRecords ?? 10_000;
  const states = new Map<string, KeyState>();
  /** One map per period kind: creation order is expiry order within a kind. */
  const rollups: Record<BudgetPeriod, Map<string, Rollup>> = { day: new Map(), week: new Map(), month: new Map() };
  const settled = new Map<string, number>();
  let records: UsageRecord[] = [];
  const keys = new Map<string, StoredKey>();
  const names = new Map<string, string>();
  const levels: Record<LevelKind, Map<string, StoredLevel>> = { team: new Map(), business_line: new Map() };
  let version = 0;
  /** admission id → its lease and the subjects it holds a slot at; insertion order is expiry order (a renewal re-inserts). */
  const leases = new Map<string, { readonly expiresAt: number; readonly subjects: readonly string[] }>();

  const stateOf = (key: string): KeyState => {
    let s = states.get(key);
    if (!s) {
      s = { requests: new Map(), tokens: new Map(), tokenSum: 0, inFlight: new Map() };
      states.set(key, s);
    }
    return s;
  };

  const rollupOf = (key: string, kind: BudgetPeriod, periodId: string, at: number): Rollup => {
    const map = rollups[kind];
    const id = `${key}\u0000${periodId}`;
    let r = map.get(id);
    if (!r) {
      r = emptyRollup(at + ROLLUP_TTL_MS[kind]);
      map.set(id, r);
    }
    return r;
  };

  const budgetRollup = (key: string, periodId: string, at: number): Rollup => {
    const kind = periodId.startsWith("d") ? "day" : periodId.startsWith("w") ? "week" : "month";
    return rollupOf(key, kind, periodId, at);
  };

  /** Frees one admission's slot and budget reservation at every level it holds one (the Redis script's end_lease); false when it held none. */
  const endLease = (id: string, at: number): boolean => {
    const lease = leases.get(id);
    if (!lease) return false;
    leases.delete(id);
    for (const subject of lease.subjects) {
      const s = states.get(subject);
      const held = s?.inFlight.get(id);
      if (!s || !held) continue;
      s.inFlight.delete(id);
      if (held.periodId !== undefined) budgetRollup(subject, held.periodId, at).reservedMicros -= held.micros;
    }
    return true;
  };

  /** Leases that ran out, whichever key they belong to. */
  const sweepLeases = (at: number) => {
    for (const [id, lease] of leases) {
      if (lease.expiresAt > at) break;
      endLease(id, at);
    }
  };

  /** Expired window entries and leases, and (everywhere) expired rollups and settle markers. */
  const sweep = (key: string, s: KeyState, at: number) => {
    const since = at - WINDOW_MS;
    for (const [id, t] of s.requests) {
      if (t > since) break;
      s.requests.delete(id);
    }
    for (const [id, e] of s.tokens) {
      if (e.at > since) break;
      s.tokens.delete(id);
      s.tokenSum -= e.amount;
    }
    sweepLeases(at);
    for (const [id, f] of s.inFlight) {
      if (f.expiresAt > at) break;
      if (endLease(id, at)) continue;
      s.inFlight.delete(id);
      if (f.periodId !== undefined) budgetRollup(key, f.periodId, at).reservedMicros -= f.micros;
    }
    for (const map of Object.values(rollups)) {
      for (const [id, r] of map) {
        if (r.expiresAt > at) break;
        map.delete(id);
      }
    }
    for (const [id, expiresAt] of settled) {
      if (expiresAt > at) break;
      settled.delete(id);
    }
  };

  const tokensRetryMs = (s: KeyState, need: number, at: number): number => {
    let freed = 0;
    let walked = 0;
    let retry = WINDOW_MS;
    for (const e of s.tokens.values()) {
      freed += e.amount;
      retry = e.at + WINDOW_MS - at;
      if (freed >= need || ++walked >= RETRY_WALK) break;
    }
    return retry;
  };

  /** Uncounts one admission and frees what it holds (the Redis script's release_admission). */
  const releaseAdmission = (key: string, s: KeyState, id: string, at: number) => {
    s.requests.delete(id);
    const entry = s.tokens.get(id);
    if (entry) {
      s.tokens.delete(id);
      s.tokenSum -= entry.amount;
    }
    const held = s.inFlight.get(id);
    if (held) {
      s.inFlight.delete(id);
      if (held.periodId !== undefined) budgetRollup(key, held.periodId, at).reservedMicros -= held.micros;
    }
  };

  /** Window entries stay in time order (sweeps stop at the first young one): an entry older than the newest is counted from the newest's time. */
  const lastAt = <T>(map: Map<string, T>, time: (v: T) => number, fallback: number) => {
    let last = fallback;
    for (const v of map.values()) last = Math.max(last, time(v));
    return last;
  };

  return {
    async admit(req: AdmitRequest): Promise<AdmitResult> {
      const at = now();
      if (req.runtimeSha256 !== undefined && !keys.has(req.runtimeSha256)) return { ok: false, reason: "revoked", quota: {} };
      if (req.settingsVersion !== undefined && req.settingsVersion !== String(version)) return { ok: false, reason: "stale", quota: {} };
      const levels: Level[] = [
        { subject: req.key, limits: req.limits, ...(req.budget ? { budget: req.budget } : {}) },
        ...(req.parents ?? []).map((p) => ({ subject: subjectOf(p), level: p.level, limits: p.limits, ...(p.budget ? { budget: p.budget } : {}) })),
      ];
      const seen: Array<{ readonly level: Level; readonly s: KeyState; readonly period?: { readonly kind: BudgetPeriod; readonly id: string; readonly endMs: number }; readonly roll?: Rollup }> = [];
      for (const level of levels) {
        const s = stateOf(level.subject);
        sweep(level.subject, s, at);
        const period = level.budget ? periodOf(level.budget.period, at) : undefined;
        seen.push({ level, s, ...(period ? { period, roll: rollupOf(level.subject, period.kind, period.id, at) } : {}) });
      }
      const key = seen[0]!;
      const keyReserved = key.roll?.reservedMicros ?? 0;
      const keyUsed = key.roll ? key.roll.spendMicros + keyReserved : 0;
      const { requestsPerMinute: keyRpm, tokensPerMinute: keyTpm, concurrentStreams: keyStreams } = req.limits;
      const firstRequest = key.s.requests.values().next();
      const firstToken = key.s.tokens.values().next();
      const quota = (admitted: number): Quota => ({
        ...(keyRpm ? { requests: { limit: keyRpm, remaining: Math.max(0, keyRpm - key.s.requests.size), resetMs: firstRequest.done ? (admitted ? WINDOW_MS : 0) : firstRequest.value + WINDOW_MS - at } } : {}),
        ...(keyTpm ? { tokens: { limit: keyTpm, remaining: Math.max(0, keyTpm - key.s.tokenSum), resetMs: firstToken.done ? (admitted ? WINDOW_MS : 0) : firstToken.value.at + WINDOW_MS - at } } : {}),
        ...(keyStreams ? { streams: { limit: keyStreams, inUse: key.s.inFlight.size } } : {}),
        ...(req.budget && key.period
          ? {
              budget: {
                limitMicros: req.budget.usdMicros,
                usedMicros: keyUsed + (admitted ? req.reserveMicros : 0),
                reservedMicros: keyReserved + (admitted ? req.reserveMicros : 0),
                resetMs: key.period.endMs - at,
              },
            }
          : {}),
      });

      for (const { level, s, period, roll } of seen) {
        const refuse = (reason: LimitReason, retryAfterMs?: number): AdmitResult => ({
          ok: false,
          reason,
          ...(level.level ? { level: level.level } : {}),
          ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
          quota: quota(0),
          ...(reason === "budget" && roll ? { levelBudget: { usedMicros: roll.spendMicros + roll.reservedMicros, reservedMicros: roll.reservedMicros } } : {}),
        });
        const { requestsPerMinute: rpm, tokensPerMinute: tpm, concurrentStreams: maxStreams } = level.limits;
        if (rpm && s.requests.size >= rpm) {
          const first = s.requests.values().next();
          return refuse("requests", first.done ? WINDOW_MS : first.value + WINDOW_MS - at);
        }
        if (maxStreams && s.inFlight.size >= maxStreams) return refuse("streams", STREAMS_RETRY_MS);
        if (tpm) {
          if (req.reserveTokens > tpm) return refuse("tokens");
          if (s.tokenSum + req.reserveTokens > tpm) return refuse("tokens", tokensRetryMs(s, s.tokenSum + req.reserveTokens - tpm, at));
        }
        if (level.budget && period && roll) {
          if (req.reserveMicros > level.budget.usdMicros) return refuse("budget");
          if (roll.spendMicros + roll.reservedMicros + req.reserveMicros > level.budget.usdMicros) return refuse("budget", period.endMs - at);
        }
      }

      for (const { level, s, period, roll } of seen) {
        if (level.limits.requestsPerMinute) s.requests.set(req.admissionId, at);
        if (level.limits.tokensPerMinute) {
          s.tokens.set(req.admissionId, { at, amount: req.reserveTokens });
          s.tokenSum += req.reserveTokens;
        }
        const micros = roll ? req.reserveMicros : 0;
        s.inFlight.set(req.admissionId, { expiresAt: at + leaseMs, micros, ...(period ? { periodId: period.id } : {}) });
        if (roll) roll.reservedMicros += micros;
      }
      leases.set(req.admissionId, { expiresAt: at + leaseMs, subjects: levels.map((l) => l.subject) });
      return { ok: true, quota: quota(1), admittedAt: at, shared: true };
    },

    async settle(settlement: Settlement): Promise<SettleResult> {
      const at = now();
      const { record } = settlement;
      const levels = [{ subject: settlement.key, reservedTokens: settlement.reservedTokens }, ...(settlement.parents ?? []).map((p) => ({ subject: subjectOf(p), reservedTokens: p.reservedTokens }))];
      for (const { subject } of levels) sweep(subject, stateOf(subject), at);
      if (settled.has(settlement.admissionId)) return "duplicate";
      settled.set(settlement.admissionId, at + SETTLED_MEMORY_MS);
      endLease(settlement.admissionId, at);
      const actual = record.inputTokens + record.outputTokens;
      const spent: LevelSpend[] = [];
      for (const { subject, reservedTokens } of levels) {
        const s = stateOf(subject);
        if (!settlement.shared) {
          releaseAdmission(subject, s, settlement.admissionId, at);
          if (settlement.admittedAt > at - WINDOW_MS) {
            const id = `${settlement.admissionId}:local`;
            s.requests.set(
              id,
              lastAt(s.requests, (t) => t, settlement.admittedAt),
            );
            if (reservedTokens > 0 && actual > 0) {
              s.tokens.set(id, { at: lastAt(s.tokens, (e) => e.at, settlement.admittedAt), amount: actual });
              s.tokenSum += actual;
            }
          }
        }
        const held = s.inFlight.get(settlement.admissionId);
        if (held) {
          s.inFlight.delete(settlement.admissionId);
          if (held.periodId !== undefined) budgetRollup(subject, held.periodId, at).reservedMicros -= held.micros;
        }
        if (settlement.shared && reservedTokens > 0) {
          const entry = s.tokens.get(settlement.admissionId);
          if (entry) {
            s.tokenSum += actual - entry.amount;
            entry.amount = actual;
          } else if (actual > reservedTokens) {
            // The reservation already left the window (a stream longer than a minute): the excess counts now.
            s.tokens.set(`${settlement.admissionId}:late`, { at, amount: actual - reservedTokens });
            s.tokenSum += actual - reservedTokens;
          }
        }
        const after = { day: 0, week: 0, month: 0 };
        for (const kind of PERIOD_KINDS) {
          const r = rollupOf(subject, kind, periodOf(kind, settlement.admittedAt).id, at);
          r.requests++;
          r.inputTokens += record.inputTokens;
          r.outputTokens += record.outputTokens;
          r.cachedInputTokens += record.cachedInputTokens;
          r.reasoningTokens += record.reasoningTokens;
          r.spendMicros += record.costMicros;
          if (record.estimated) r.estimatedRequests++;
          after[kind] = r.spendMicros;
        }
        spent.push(after);
      }
      if (options.onSpend && record.costMicros !== 0) {
        // A listener's trouble is its own: the settle is stored.
        try {
          options.onSpend(settlement, spent);
        } catch {
          // an alert lost, never the settle
        }
      }
      records.push(record);
      if (records.length > maxRecords) records = records.slice(records.length - Math.floor(maxRecords * 0.9));
      return "stored";
    },

    async release(a) {
      const at = now();
      endLease(a.admissionId, at);
      for (const subject of [a.key, ...(a.parents ?? []).map(subjectOf)]) {
        const s = stateOf(subject);
        sweep(subject, s, at);
        releaseAdmission(subject, s, a.admissionId, at);
      }
    },

    async heartbeat(ids) {
      const at = now();
      sweepLeases(at);
      const expiresAt = at + leaseMs;
      for (const id of ids) {
        const lease = leases.get(id);
        if (!lease) continue;
        // Re-inserted, so insertion order stays expiry order (one lease length per store).
        leases.delete(id);
        leases.set(id, { expiresAt, subjects: lease.subjects });
        for (const subject of lease.subjects) {
          const s = states.get(subject);
          const held = s?.inFlight.get(id);
          if (!s || !held) continue;
          s.inFlight.delete(id);
          s.inFlight.set(id, { ...held, expiresAt });
        }
      }
    },

    async usage(key, kind, atMs): Promise<UsageTotals> {
      sweepLeases(now());
      const period = periodOf(kind, atMs ?? now());
      const r = rollups[kind].get(`${key}\u0000${period.id}`);
      const { expiresAt: _, ...totals } = r ?? emptyRollup(0);
      return { periodId: period.id, ...totals };
    },

    async headroom(key, limits): Promise<Headroom> {
      const at = now();
      const s = states.get(key);
      const { requestsPerMinute: rpm, tokensPerMinute: tpm } = limits;
      // Counted as a sweep would leave them, without sweeping: insertion order is time order.
      const since = at - WINDOW_MS;
      let requests = s?.requests.size ?? 0;
      for (const t of s?.requests.values() ?? []) {
        if (t > since) break;
        requests--;
      }
      let tokens = s?.tokenSum ?? 0;
      for (const e of s?.tokens.values() ?? []) {
        if (e.at > since) break;
        tokens -= e.amount;
      }
      let streams = s?.inFlight.size ?? 0;
      for (const f of s?.inFlight.values() ?? []) {
        if (f.expiresAt > at) break;
        streams--;
      }
      return {
        ...(rpm ? { requestsRemaining: Math.max(0, rpm - requests) } : {}),
        ...(tpm ? { tokensRemaining: Math.max(0, tpm - tokens) } : {}),
        streamsActive: streams,
      };
    },

    async records(count) {
      return records.slice(Math.max(0, records.length - count));
    },

    async createKey(key) {
      if (names.has(key.name)) return "exists";
      if (keys.size >= MAX_RUNTIME_KEYS) return "full";
      keys.set(key.sha256, key);
      names.set(key.name, key.sha256);
      version++;
      return "created";
    },

    async revokeKey(name) {
      const sha = names.get(name);
      const key = sha === undefined ? undefined : keys.get(sha);
      if (!key) return undefined;
      keys.delete(key.sha256);
      names.delete(name);
      version++;
      return key;
    },

    async listKeys() {
      return [...keys.values()];
    },

    async updateKey(key) {
      if (names.get(key.name) !== key.sha256) return "missing";
      keys.set(key.sha256, key);
      version++;
      return "updated";
    },

    async putLevel(kind, level, mode) {
      const map = levels[kind];
      const exists = map.has(level.name);
      if (mode === "create" && exists) return "exists";
      if (mode === "create" && map.size >= MAX_LEVELS) return "full";
      if (mode === "update" && !exists) return "missing";
      map.set(level.name, level);
      version++;
      return mode === "create" ? "created" : "updated";
    },

    async deleteLevel(kind, name) {
      const level = levels[kind].get(name);
      if (!level) return undefined;
      levels[kind].delete(name);
      version++;
      return level;
    },

    async listLevels(kind) {
      return [...levels[kind].values()];
    },

    async keysVersion() {
      return String(version);
    },

    async close() {},
  };
}
