import type { AdmitResult, ParentLevel, TenantStore } from "../store/tenant-store.js";
import { subjectOf } from "../store/tenant-store.js";
import type { Principal } from "./principal.js";

/** Admissions asked again after a `stale` answer, at most; then admitted on the copy as re-read (an admin writing without pause cannot starve requests). */
const STALE_RETRIES = 3;

/** What an admission reserves, computed again for the key as re-read. */
export interface Reservation {
  readonly tokens: number;
  readonly micros: number;
}

/**
 * One admission on the key's settings as the shared store holds them now,
 * for every kind of request that admits a key (a model call, an MCP tool
 * call): a key that may depend on runtime settings (a runtime key, or one
 * with a team) carries this replica's settings version; a `stale` answer
 * (another replica changed them) re-reads the key, lets the caller take
 * the fresh key in (`take`: its levels, its checks, which may throw) and
 * asks again, a bounded number of times; a key gone meanwhile is
 * `revoked`. Store failures are thrown as they come.
 */
export async function admitOnCurrentSettings<R extends Reservation>(
  deps: { readonly store: TenantStore; readonly settingsVersion?: () => string | undefined; readonly reread?: (sha256: string) => Promise<Principal | undefined> },
  admission: {
    readonly id: string;
    readonly current: () => { readonly principal: Principal; readonly parents: readonly ParentLevel[] };
    readonly reserve: () => R;
    readonly take: (fresh: Principal) => void;
  },
): Promise<{ readonly result: AdmitResult; readonly reserved: R }> {
  for (let attempt = 0; ; attempt++) {
    const { principal, parents } = admission.current();
    const reserved = admission.reserve();
    const version = attempt < STALE_RETRIES && (principal.source === "runtime" || principal.team !== undefined) ? deps.settingsVersion?.() : undefined;
    const result = await deps.store.admit({
      key: subjectOf({ level: "key", id: principal.id }),
      admissionId: admission.id,
      limits: principal.limits,
      ...(principal.budget ? { budget: principal.budget } : {}),
      ...(principal.source === "runtime" ? { runtimeSha256: principal.sha256 } : {}),
      reserveTokens: reserved.tokens,
      reserveMicros: reserved.micros,
      ...(version === undefined ? {} : { settingsVersion: version }),
      ...(parents.length > 0 ? { parents } : {}),
    });
    if (result.ok || result.reason !== "stale" || !deps.reread) return { result, reserved };
    const fresh = await deps.reread(principal.sha256);
    if (!fresh) return { result: { ok: false, reason: "revoked", quota: {} }, reserved };
    admission.take(fresh);
  }
}
