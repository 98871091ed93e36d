import type { TeamSettings } from "../config/config.js";
import type { StoredKey, TenantStore } from "../store/tenant-store.js";
import type { Hierarchy } from "./hierarchy.js";
import { withLevelId } from "./level-id.js";
import { keyId, type Principal } from "./principal.js";

/** A team or business line created at run time, with its id. */
export type RuntimeLevel = TeamSettings & { readonly createdAt: number };

/**
 * This replica's copy of the keys created at run time, so that
 * authentication is a local lookup. It follows the store's key version:
 * polled every POLL_MS, re-read at once when a request presents a key it
 * does not know (at most once per MISS_REFRESH_MS, so unknown keys cannot
 * turn into a flood of Redis reads), and after this replica's own admin
 * writes. Revocation does not wait for it: every admission checks that a
 * runtime key is still active, in the same Redis round trip. Nor do
 * updates: an admission carries the version this copy was read at, and a
 * stale one is re-read (catchUp) and asked again. Teams and business lines
 * created at run time ride on the same version and reads.
 */
export interface KeyRegistry extends Hierarchy {
  get(sha256: string): Principal | undefined;
  all(): readonly Principal[];
  teams(): readonly RuntimeLevel[];
  businessLines(): readonly RuntimeLevel[];
  /** Re-reads if the version moved (single flight), unless a miss did so very recently. */
  refreshOnMiss(): Promise<void>;
  /** Re-reads now (after a create or revoke on this replica). */
  refresh(): Promise<void>;
  /** Re-reads if the store's version moved, now (an admission found this copy stale); waits for a read in flight first. */
  catchUp(): Promise<void>;
  /** The store's key version this copy was read at (undefined before the first read). */
  version(): string | undefined;
  /**
   * True while the store could not be read the last time this copy tried
   * (Redis slow or away): a key the copy does not know may exist, so it is
   * refused as unavailable, never as invalid.
   */
  unreadable(): boolean;
  close(): void;
}

export const KEY_POLL_MS = 250;
const MISS_REFRESH_MS = 100;

function principalOf(key: StoredKey): Principal {
  return {
    source: "runtime",
    id: keyId(key.sha256),
    name: key.name,
    sha256: key.sha256,
    createdAt: key.createdAt,
    ...(key.team === undefined ? {} : { team: key.team }),
    limits: key.limits,
    ...(key.models ? { models: key.models } : {}),
    ...(key.budget ? { budget: key.budget } : {}),
    ...(key.mcp ? { mcp: key.mcp } : {}),
  };
}

export function createKeyRegistry(options: { readonly store: TenantStore; readonly poll: boolean; readonly onError: (error: unknown) => void }): KeyRegistry {
  const { store } = options;
  let byHash = new Map<string, Principal>();
  let teams = new Map<string, RuntimeLevel>();
  let lines = new Map<string, RuntimeLevel>();
  let version: string | undefined;
  let failing = false;
  let inFlight: Promise<void> | undefined;
  let lastMiss = Number.NEGATIVE_INFINITY;

  const load = (force: boolean): Promise<void> => {
    inFlight ??= (async () => {
      try {
        const current = await store.keysVersion();
        if (force || current !== version) {
          const [keys, teamList, lineList] = await Promise.all([store.listKeys(), store.listLevels("team"), store.listLevels("business_line")]);
          byHash = new Map(keys.map((k) => [k.sha256, principalOf(k)]));
          teams = new Map(teamList.map((t) => [t.name, withLevelId("team", t)]));
          lines = new Map(lineList.map((l) => [l.name, withLevelId("business_line", l)]));
          version = current;
        }
        failing = false;
      } catch (error) {
        failing = true;
        options.onError(error);
      } finally {
        inFlight = undefined;
      }
    })();
    return inFlight;
  };

  const timer = options.poll ? setInterval(() => void load(false), KEY_POLL_MS) : undefined;
  timer?.unref();
  void load(true);

  return {
    get: (sha256) => byHash.get(sha256),
    all: () => [...byHash.values()],
    team: (name) => teams.get(name),
    businessLine: (name) => lines.get(name),
    teams: () => [...teams.values()],
    businessLines: () => [...lines.values()],
    refreshOnMiss() {
      const now = performance.now();
      if (now - lastMiss < MISS_REFRESH_MS) return inFlight ?? Promise.resolve();
      lastMiss = now;
      return load(false);
    },
    async refresh() {
      await inFlight;
      await load(true);
    },
    async catchUp() {
      await inFlight;
      await load(false);
    },
    version: () => version,
    unreadable: () => failing || version === undefined,
    close() {
      if (timer) clearInterval(timer);
    },
  };
}
