import type { RouteTarget } from "../config/config.js";
import type { Delta } from "../core/delta.js";
import type { GatewayError } from "../core/errors.js";
import type { LimitReason, SettleResult } from "../store/tenant-store.js";
import type { UsageRecord } from "../usage/usage-record.js";

/** How one upstream attempt ended, from the request's point of view. */
export type AttemptOutcome =
  /** It produced the first delta: the request is committed to it. */
  | "committed"
  /** It failed before its first delta. */
  | "failed"
  /** The provider's admission queue shed it. */
  | "shed"
  /** Another attempt (a hedge, or the original) produced its first delta first. */
  | "lost_hedge"
  /** The client left, or the gateway ended the request. */
  | "canceled";

export interface AttemptInfo {
  readonly alias: string;
  readonly target: RouteTarget;
  /** 0 for the first attempt of the request. */
  readonly index: number;
  /** Started in parallel with another attempt because no first delta came in time. */
  readonly hedge: boolean;
  /** A target this request already tried. */
  readonly retry: boolean;
}

export interface AttemptRecord extends AttemptInfo {
  readonly outcome: AttemptOutcome;
  /** From the attempt's start to its first delta or its failure. */
  readonly ms: number;
  readonly error?: GatewayError;
}

/** What one attempt reports while it runs. */
export interface AttemptObserver {
  /** Headers for the upstream request: the W3C trace context of the attempt's span. */
  readonly headers: Readonly<Record<string, string>>;
  /** The provider admitted it after `waitMs` in its queue. */
  admitted(waitMs: number): void;
  /** The upstream request is being sent now: the gateway's part of the attempt is done until its answer comes. */
  sent?(): void;
  firstDelta(): void;
  /** Deltas that arrived from upstream after the request had been abandoned: work for nobody. */
  afterAbort(deltas: number): void;
}

/**
 * One stream as the stages report it, for logs, metrics and traces alike
 * (telemetry/stream-telemetry.ts is the one implementation). Every hook is
 * cheap; `delta` runs once per delta and only counts.
 */
export interface StreamObserver {
  attemptStarted(info: AttemptInfo): AttemptObserver;
  attemptEnded(record: AttemptRecord): void;
  /** The request is settled on an attempt; the records are every attempt so far. */
  committed(records: readonly AttemptRecord[]): void;
  delta(delta: Delta): void;
  /** The stream is over; the first call wins (a timeout before the cancel that follows it). */
  ended(error?: GatewayError): void;
}

/**
 * What tenancy reports (docs/tenancy.md), for logs and metrics: keys by
 * name, never the key itself. Process-wide rather than per stream (the
 * store's state is not a stream's). Every hook is optional and cheap.
 */
export interface TenancyObserver {
  /** An edge checked a request's key: `key` on success, `failure` otherwise. */
  authenticated?(event: { readonly edge: string; readonly key?: string; readonly failure?: "missing" | "malformed" | "unknown"; readonly remote?: string }): void;
  /** A key's request passed its limits and budget; `shared` false: admitted by this replica's fallback (Redis away). */
  tenantAdmitted?(event: { readonly key: string; readonly alias: string; readonly shared: boolean }): void;
  /** A key's request was refused before any upstream attempt. */
  tenantRefused?(event: {
    /** The key's name, for people. */
    readonly key: string;
    /** The key's id (Principal.id): who it was. */
    readonly keyId: string;
    readonly alias: string;
    readonly reason: LimitReason | "revoked" | "not_allowed" | "store_unavailable";
    /** The level whose limit refused, when a limit did (key, team, business_line). */
    readonly level?: string;
    readonly requestId?: string;
    /** The client's address. */
    readonly remote?: string;
  }): void;
  /**
   * A stream's usage reached the store (`stored`), or waits for Redis
   * (`buffered`), or was already there (`duplicate`), or is lost because
   * the buffer was full (`dropped`); `flushed`: a buffered record reached
   * Redis later.
   */
  usageRecorded?(event: { readonly record: UsageRecord; readonly result: SettleResult | "flushed" }): void;
  /** One admission or settle served by this replica alone because Redis was down or slow. */
  storeFallback?(event: { readonly operation: "admit" | "settle" }): void;
  /** Redis refused a call for good (CROSSSLOT, NOPERM…: store/redis-rejection.ts), by operation and the reply's code. */
  storeRejected?(event: { readonly operation: string; readonly code: string }): void;
  /** Redis stopped answering (`up` false, with the cause) or answers again. */
  storeState?(event: { readonly up: boolean; readonly cause?: string }): void;
  /** A budget threshold was crossed and announced (once per period, by one replica); the audit log records it. */
  budgetAlert?(event: {
    readonly level: string;
    /** The level's id: what the alert is about (its name may be borne later by another). */
    readonly id: string;
    readonly name: string;
    readonly threshold: number;
    readonly period?: string;
    /** The budget period's id (`m2026-12`). */
    readonly periodId?: string;
    readonly budgetMicros?: number;
    /** Absent for a budget found full at admission. */
    readonly spentMicros?: number;
  }): void;
  /** What became of an alert's webhook delivery. */
  alertDelivery?(event: { readonly result: "delivered" | "retried" | "dropped" }): void;
}
