import type { Principal } from "../tenancy/principal.js";

/** A policy decision about one request, for the audit log: counts by detector, never values. */
export interface ComplianceDecision {
  readonly action: "pii.block" | "pii.redact" | "pii.local_only" | "route.local_only";
  readonly outcome: "ok" | "refused";
  readonly alias: string;
  readonly requestId: string;
  readonly principal?: Principal;
  /** The client's address. */
  readonly remote?: string;
  readonly found?: Readonly<Record<string, number>>;
}
