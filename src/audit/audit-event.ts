import { randomUUID } from "node:crypto";

/** Who acted: an admin key (its id), a virtual key (its id; its name is in the details), nobody known, or the gateway itself. */
export interface AuditActor {
  readonly kind: "admin" | "key" | "anonymous" | "system";
  /**
   * The admin key's id or the virtual key's id (keyId: the first 12 hex
   * digits of its SHA-256, as ListKeys shows it), never its name, which a
   * later key may bear; never a secret. An
   * authentication failure has no actor to name: `anonymous`, and at most
   * a fingerprint of what was presented, never the presented key.
   */
  readonly id: string;
  /** The client's address. */
  readonly remote?: string;
}

export type AuditOutcome = "ok" | "refused" | "failed";

/**
 * Facts about the action for whoever reads the log later: counts, names,
 * limits. Never a secret, a prompt or a header: the log is kept for good
 * and shown to every admin, so callers pass counts and names only.
 */
export type AuditDetails = Readonly<Record<string, string | number | boolean>>;

/** One thing that happened, as it is kept in the audit log (issue #28 §3). */
export interface AuditEvent {
  /** A UUID, made once: writing the same event twice (a retried batch) keeps one row. */
  readonly id: string;
  /** Epoch ms, whole. */
  readonly at: number;
  readonly actor: AuditActor;
  /** Dotted, noun first: "key.create", "config.reload", "budget.refuse", "pii.block", "auth.fail". */
  readonly action: string;
  /** What the action was done to: a key name, a team, an alias. */
  readonly target?: string;
  readonly outcome: AuditOutcome;
  readonly requestId?: string;
  readonly details?: AuditDetails;
}

/** What a caller gives: the event without its id and time, which are filled in (either may be given: a replayed event keeps its own). */
export type AuditInput = Omit<AuditEvent, "id" | "at"> & { readonly id?: string; readonly at?: number };

/** Longest kept text of one field; the rest is cut, so one careless caller cannot fill the buffer with one event. */
export const MAX_FIELD_CHARS = 512;
/** Detail entries kept at most, in key order. */
export const MAX_DETAILS = 32;
/** Latest time an event may carry (JavaScript's last date, which PostgreSQL can store). */
const MAX_AT = 8.64e15;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ACTOR_KINDS: ReadonlySet<string> = new Set(["admin", "key", "anonymous", "system"]);
const OUTCOMES: ReadonlySet<string> = new Set(["ok", "refused", "failed"]);
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * Text as PostgreSQL keeps it: it stores no NUL and no lone surrogate (the
 * driver would turn one into U+FFFD), and a row that reads back other than
 * it was hashed would look altered; a row it refuses would stop the queue.
 */
function text(value: string): string {
  return value.slice(0, MAX_FIELD_CHARS).replace(UNSTORABLE, "\uFFFD");
}

const optional = (value: string | undefined) => (value === undefined ? undefined : text(value));

function details(input: AuditDetails | undefined): AuditDetails | undefined {
  if (input === undefined) return undefined;
  const entries = Object.entries(input)
    .filter(([, v]) => typeof v === "string" || typeof v === "boolean" || typeof v === "number")
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, MAX_DETAILS)
    .map(([k, v]) => [text(k), typeof v === "string" ? text(v) : typeof v === "number" && !Number.isFinite(v) ? String(v) : v] as const);
  return entries.length === 0 ? undefined : Object.fromEntries(entries);
}

/**
 * An event from what a caller gives: id and time filled in (`now`,
 * `newId` injectable), text cut and made storable, empty details left out.
 * Throws a TypeError for what could never be stored: an id that is not a
 * UUID, an unknown actor kind or outcome.
 */
export function buildAuditEvent(input: AuditInput, now: () => number = Date.now, newId: () => string = randomUUID): AuditEvent {
  const id = (input.id ?? newId()).toLowerCase();
  if (!UUID.test(id)) throw new TypeError("audit event id is not a UUID");
  if (!ACTOR_KINDS.has(input.actor.kind)) throw new TypeError("audit event actor kind is not one of admin, key, anonymous, system");
  if (!OUTCOMES.has(input.outcome)) throw new TypeError("audit event outcome is not one of ok, refused, failed");
  const at = input.at !== undefined && Number.isFinite(input.at) && input.at >= 0 && input.at <= MAX_AT ? Math.round(input.at) : Math.round(now());
  return {
    id,
    at,
    actor: { kind: input.actor.kind, id: text(input.actor.id), remote: optional(input.actor.remote) },
    action: text(input.action),
    target: optional(input.target),
    outcome: input.outcome,
    requestId: optional(input.requestId),
    details: details(input.details),
  };
}

/** An event read back from where it waited (a Redis stream entry), or undefined for anything that is not one. */
export function parseAuditEvent(json: string): AuditEvent | undefined {
  try {
    const value = JSON.parse(json) as Partial<AuditEvent> | null;
    if (typeof value?.id !== "string" || typeof value.at !== "number" || typeof value.actor?.id !== "string" || typeof value.action !== "string") return undefined;
    return buildAuditEvent(value as AuditEvent);
  } catch {
    return undefined;
  }
}
