import type { BudgetPeriod, KeyBudget, KeyLimits, KeySettings, TeamSettings } from "../config/config.js";
import type { UsageRecord } from "../usage/usage-record.js";

/**
 * Where tenancy keeps its state: rate-limit windows, in-flight streams,
 * spend, usage records and rollups, and keys created at run time. One
 * interface, two implementations that behave the same (a shared contract
 * test runs against both): in process (memory-tenant-store.ts, one replica)
 * and Redis (redis-tenant-store.ts, every replica sharing one Redis), with
 * fail-open-store.ts wrapping Redis for the times it is down or slow.
 */
export interface TenantStore {
  /** One admission, atomically: every limit checked, and if all pass, everything reserved. */
  admit(request: AdmitRequest): Promise<AdmitResult>;
  /** The end of an admitted stream: reservations replaced by what was used, the usage recorded. Idempotent per admission id. */
  settle(settlement: Settlement): Promise<SettleResult>;
  /**
   * An admission this store granted that will never be settled as its own:
   * its caller stopped waiting for the answer and decided locally. Uncounts
   * the request and its tokens and frees its slot and budget reservation,
   * so nothing is counted twice or held until the lease runs out. Idempotent.
   */
  release(admission: AdmissionRef): Promise<void>;
  /**
   * A replica's heartbeat, every third of the stream lease: renews the
   * leases of `admissionIds` (streams still running on this replica, which
   * may outlive one lease) at every level they hold one, and releases every
   * lease that ran out, whoever held it (a replica that died mid-stream),
   * slot and budget reservation. An admission already settled, released or
   * expired is not renewed.
   */
  heartbeat(admissionIds: readonly string[]): Promise<void>;
  /** A key's totals (`key`: its subject) for the period of `kind` containing `atMs` (the store's clock when absent); leases that ran out are released first, so no dead stream's reservation shows. */
  usage(key: string, kind: BudgetPeriod, atMs?: number): Promise<UsageTotals>;
  /**
   * What is left of a key's per-minute limits and how many streams hold a
   * slot now, for the live view. Reads only: it sweeps nothing and
   * reserves nothing, so watching a key never changes what it may do.
   */
  headroom(key: string, limits: KeyLimits): Promise<Headroom>;
  /** The most recent usage records, newest last. */
  records(count: number): Promise<UsageRecord[]>;
  /** Stores a key created at run time; refuses a name in use or a full key table. */
  createKey(key: StoredKey): Promise<"created" | "exists" | "full">;
  /** Removes a runtime key by name; its name is free again. Returns the removed key. */
  revokeKey(name: string): Promise<StoredKey | undefined>;
  /** Every active runtime key. */
  listKeys(): Promise<StoredKey[]>;
  /** Replaces a runtime key's settings (same name, same hash); `missing` when no such key is active. */
  updateKey(key: StoredKey): Promise<"updated" | "missing">;
  /** Stores a team or business line created (or changed) at run time. */
  putLevel(kind: LevelKind, level: StoredLevel, mode: "create" | "update"): Promise<"created" | "updated" | "exists" | "missing" | "full">;
  /** Removes a runtime team or business line; returns it. */
  deleteLevel(kind: LevelKind, name: string): Promise<StoredLevel | undefined>;
  /** Every runtime team or business line. */
  listLevels(kind: LevelKind): Promise<StoredLevel[]>;
  /** Changes whenever a runtime key, team or business line is created, changed or removed (replicas poll it to refresh their cache). */
  keysVersion(): Promise<string>;
  close(): Promise<void>;
}

/** Runtime teams, and runtime business lines, at most (each; a bound on what every replica caches). */
export const MAX_LEVELS = 10_000;

/** Runtime keys at most (a bound on what every replica caches). */
export const MAX_RUNTIME_KEYS = 10_000;

/** A key created through the admin service: its settings and the SHA-256 of the key, never the key. */
export interface StoredKey extends KeySettings {
  readonly sha256: string;
  /** Epoch milliseconds. */
  readonly createdAt: number;
}

/** A team or business line created through the admin service. Business lines have no `businessLine`. */
export interface StoredLevel extends Omit<TeamSettings, "id"> {
  /** Minted at creation, never reused; absent on levels stored before ids (tenancy/level-id.ts derives one). */
  readonly id?: string;
  /** Epoch milliseconds. */
  readonly createdAt: number;
}

export type LevelKind = "team" | "business_line";

export type LimitReason = "requests" | "tokens" | "streams" | "budget";

/** Where a limit or budget sits: the key itself, its team, or the team's business line. */
export type TenantLevel = "key" | "team" | "business_line";

/** A level above the key: its id, which its state is kept under, and its name, for messages. */
export interface LevelRef {
  readonly level: Exclude<TenantLevel, "key">;
  /** Never reused: a level deleted and created again under its name has a new id, and none of the old one's state. */
  readonly id: string;
  readonly name: string;
}

/** A level above the key whose limits and budget the key's requests count against as well. */
export interface ParentLevel extends LevelRef {
  readonly limits: KeyLimits;
  readonly budget?: KeyBudget;
}

/**
 * The name a level's windows, leases and rollups are kept under: its id
 * (Principal.id for a key), never its name, which a key or level created
 * after it was removed may take again. Each level has a prefix that no
 * name can start with (names start with a letter or digit), so none meets
 * another, nor the state versions before ids kept under names (`{name}`,
 * `~team:{name}`, `~bl:{name}`; docs/tenancy.md, "Upgrading to ids").
 */
export function subjectOf(ref: { readonly level: TenantLevel; readonly id: string }): string {
  return `${ref.level === "key" ? "~k:" : ref.level === "team" ? "~t:" : "~b:"}${ref.id}`;
}

export interface AdmitRequest {
  /** The key's subject, subjectOf its id: limits, spend and usage are kept per key id, never per name. */
  readonly key: string;
  /** For runtime keys: the key's hash, which must still be active (revocation is checked here, at every admission). */
  readonly runtimeSha256?: string;
  /** Unique per admission (not the client's request id, which a client may repeat). */
  readonly admissionId: string;
  readonly limits: KeyLimits;
  readonly budget?: KeyBudget;
  /** Tokens reserved against tokensPerMinute: estimated input + max output. */
  readonly reserveTokens: number;
  /** Micro-dollars reserved against the budget: the most the request can cost. */
  readonly reserveMicros: number;
  /**
   * The version of runtime keys, teams and lines (keysVersion) the caller's
   * settings were read at. When the store's version differs, nothing is
   * counted and the answer is `stale`: the caller re-reads and asks again,
   * so an update reaches every replica's next admission. Absent: not checked.
   */
  readonly settingsVersion?: string;
  /**
   * The key's team, then the team's business line: checked with the key in
   * the same atomic step, each level reserving what it limits (tokens
   * where it has tokensPerMinute, micro-dollars where it has a budget).
   */
  readonly parents?: readonly ParentLevel[];
}

/** One admission, by the key (and the levels above it) it was counted under. */
export interface AdmissionRef {
  /** The key's subject (subjectOf its id). */
  readonly key: string;
  readonly admissionId: string;
  readonly parents?: readonly LevelRef[];
}

/** What is left, for response headers (x-ratelimit-*). Present for the limits the key has. */
export interface Quota {
  readonly requests?: { readonly limit: number; readonly remaining: number; readonly resetMs: number };
  readonly tokens?: { readonly limit: number; readonly remaining: number; readonly resetMs: number };
  readonly streams?: { readonly limit: number; readonly inUse: number };
  /** Spent plus reserved in the current period (`usedMicros`), and of that what streams in flight hold. */
  readonly budget?: { readonly limitMicros: number; readonly usedMicros: number; readonly reservedMicros: number; readonly resetMs: number };
}

export type AdmitResult =
  | {
      readonly ok: true;
      readonly quota: Quota;
      /** The store's clock at admission (Redis's, not the replica's): settles count in its periods. */
      readonly admittedAt: number;
      /** Whether the shared store holds this admission's reservations (false: a local fallback admitted it). */
      readonly shared: boolean;
    }
  | {
      readonly ok: false;
      /** `stale`: the caller's settings are older than the store's (AdmitRequest.settingsVersion); nothing was counted. */
      readonly reason: LimitReason | "revoked" | "stale";
      /** The level whose limit refused (absent: the key, or a revoked key). */
      readonly level?: Exclude<TenantLevel, "key">;
      /**
       * A budget refusal: the refusing level's spent plus reserved, and of
       * that what streams in flight hold, so the refusal can say spent or
       * held truthfully (a level above the key shows no figures).
       */
      readonly levelBudget?: { readonly usedMicros: number; readonly reservedMicros: number };
      /** Decided on this replica's share of the limits while the shared store is away (fail-open-store.ts). */
      readonly local?: boolean;
      /** When a retry can succeed; absent when it cannot (a reservation larger than the limit). */
      readonly retryAfterMs?: number;
      readonly quota: Quota;
    };

/**
 * What became of a settlement: `stored`; `duplicate` (settled before: a
 * retried flush); `buffered` in memory until Redis returns; `dropped`
 * because that buffer was full (counted and reported).
 */
export type SettleResult = "stored" | "duplicate" | "buffered" | "dropped";

export interface Settlement {
  readonly admissionId: string;
  /** The key's subject (subjectOf its id). */
  readonly key: string;
  readonly admittedAt: number;
  /**
   * Whether the store being settled holds this admission's reservations
   * (AdmitResult.shared). False: a replica's local fallback admitted it, and
   * the shared store reconciles it (releases what it may hold under the same
   * id, counts the request in its windows).
   */
  readonly shared: boolean;
  readonly budgetPeriod?: BudgetPeriod;
  readonly reservedTokens: number;
  readonly reservedMicros: number;
  /** The levels above the key it was admitted under, each with the tokens reserved there (0 without tokensPerMinute). */
  readonly parents?: ReadonlyArray<LevelRef & { readonly reservedTokens: number }>;
  readonly record: UsageRecord;
}

/**
 * A key's headroom now. Each figure is absent when it is unknown: the
 * remaining ones when the key has no such limit, all of them when the
 * shared store cannot be read (fail-open-store.ts).
 */
export interface Headroom {
  /** requestsPerMinute minus admissions in the last 60 s (never below 0). */
  readonly requestsRemaining?: number;
  /** tokensPerMinute minus tokens counted in the last 60 s: reservations of running streams, use of ended ones. */
  readonly tokensRemaining?: number;
  /** Admitted streams not yet settled whose lease has not run out, limit or not. */
  readonly streamsActive?: number;
}

/** A key's usage in one period. */
export interface UsageTotals {
  readonly periodId: string;
  readonly requests: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedInputTokens: number;
  readonly reasoningTokens: number;
  readonly spendMicros: number;
  /** Records among `requests` whose tokens the gateway counted (no provider usage). */
  readonly estimatedRequests: number;
  /** Held by streams still running (budget reservations not yet settled). */
  readonly reservedMicros: number;
}

/** A level's spend in the rollups a settle just counted into: its day, week and month, this call included. */
export interface LevelSpend {
  readonly day: number;
  readonly week: number;
  readonly month: number;
}

/**
 * Told after each settle the store counted (not a duplicate), with each
 * level's spend after it: the key's first, then the parents' in order.
 * Budget alerts read it (tenancy/budget-alerts.ts): a threshold is
 * crossed when the spend before this call was under it and is not now.
 */
export type SpendListener = (settlement: Settlement, spent: readonly LevelSpend[]) => void;

/** The sliding window of every per-minute limit. */
export const WINDOW_MS = 60_000;
/** A streams-limit refusal's retry hint: a slot frees when some stream ends, which nobody can predict. */
export const STREAMS_RETRY_MS = 1_000;
