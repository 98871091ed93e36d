import { randomUUID } from "node:crypto";
import type { AuditTrail } from "../audit/audit-trail.js";
import type { ProviderConfig } from "../config/config.js";
import { GatewayError } from "../core/errors.js";
import type { Database } from "../db/database.js";
import type { Logger } from "../logging/logger.js";
import { takesStoredKey } from "./key-header.js";
import { deleteProviderKeys, insertPendingKey, type ProviderKeyRow, promoteKey, readProviderKeys, rejectKey } from "./provider-key-rows.js";
import { keyFingerprint, openProviderKey, sealProviderKey } from "./provider-key-seal.js";

/** A stored key as the admin API shows it: never the key. */
export interface ProviderKeyInfo {
  readonly provider: string;
  readonly fingerprint: string;
  readonly state: ProviderKeyRow["state"];
  readonly createdAt: number;
  readonly rotatedAt?: number;
  readonly rejectedStatus?: number;
}

/** What this replica sends a provider: its stored key in use, and a pending key it may try. */
export interface ProviderCredential {
  /** The stored key in use; absent: the request keeps the key apiKeyEnv gave it, if any. */
  readonly active?: string;
  /** A pending key no request is trying now: the caller tries it and settles the trial with the provider's status. */
  readonly trial?: { readonly key: string; settle(status: number): void };
}

export interface ProviderKeys {
  set(provider: string, key: string): Promise<ProviderKeyInfo>;
  list(): Promise<ProviderKeyInfo[]>;
  delete(provider: string): Promise<boolean>;
  /** This replica's view, read per upstream request; undefined when the provider has no stored key. */
  credentialFor(provider: string): ProviderCredential | undefined;
  /** Reads the table now (the poll does it every pollMs). */
  refresh(): Promise<void>;
  /** Starts the poll; `loaded` hears the first read that succeeded. */
  start(loaded?: () => void): void;
  close(): void;
}

export interface ProviderKeysOptions {
  /** The database, opened on first use; absent: store.postgres is not configured, and keys cannot be stored. */
  readonly database?: () => Promise<Database>;
  /** The value of mcp.credentialsKeyEnv: the secret keys are sealed under; absent: keys cannot be stored. */
  readonly master?: string;
  /** The provider in the configuration now. */
  readonly provider: (name: string) => ProviderConfig | undefined;
  readonly logger: Logger;
  readonly trail: AuditTrail;
  readonly replica: string;
  /** How often other replicas' changes are read. */
  readonly pollMs: number;
}

/** A key the provider accepts is 8 to 4096 visible ASCII characters (what an HTTP header carries as is). */
const KEY_SHAPE = /^[\x21-\x7e]{8,4096}$/;

interface Held {
  readonly row: ProviderKeyRow;
  /** Opened; undefined when the row does not open under this replica's secret (logged once). */
  readonly key: string | undefined;
}

interface ProviderState {
  active?: Held;
  next?: Held;
  /** A request is trying `next` now: the others keep to the key in use until it settles. */
  trying: boolean;
}

const infoOf = (row: ProviderKeyRow): ProviderKeyInfo => ({
  provider: row.provider,
  fingerprint: row.fingerprint,
  state: row.state,
  createdAt: row.createdAt,
  ...(row.rotatedAt === undefined ? {} : { rotatedAt: row.rotatedAt }),
  ...(row.rejectedStatus === undefined ? {} : { rejectedStatus: row.rejectedStatus }),
});

/**
 * Provider API keys set at run time (docs/providers.md, "Provider
 * credentials at run time"): sealed in store.postgres, read by every
 * replica on a bounded poll, and rotated without a restart. A new key is
 * pending; the next request to its provider tries it, and on a 401 or 403
 * the same request goes again with the key in use, so no caller sees the
 * bad key (credential-client.ts). Accepted once, it takes over; refused, it
 * is kept as rejected for list to show, and the old one serves on.
 */
export function createProviderKeys(options: ProviderKeysOptions): ProviderKeys {
  const { logger, trail, replica } = options;
  const states = new Map<string, ProviderState>();
  /** Opened keys by row id: a poll opens only rows it has not seen. */
  const opened = new Map<string, string | undefined>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let refreshing: Promise<void> | undefined;
  /** Counts this replica's own changes: a read that began before one is stale and is not applied. */
  let changes = 0;
  /** This replica's writes in flight: a read that begins during one may see the table before it. */
  let writing = 0;

  const usable = (): { readonly database: () => Promise<Database>; readonly master: string } => {
    if (!options.database) throw new GatewayError("failed_precondition", "provider keys are kept in store.postgres: configure it to store them");
    if (!options.master) throw new GatewayError("failed_precondition", "provider keys are sealed under the secret mcp.credentialsKeyEnv names: configure it to store them");
    return { database: options.database, master: options.master };
  };

  const hold = (row: ProviderKeyRow, master: string): Held => {
    if (!opened.has(row.id)) {
      const key = openProviderKey(row.sealed, row.provider, master);
      if (key === undefined) logger.error({ event: "provider_key.unreadable", provider: row.provider, fingerprint: row.fingerprint }, "a stored provider key does not open with this replica's mcp.credentialsKeyEnv secret");
      opened.set(row.id, key);
    }
    return { row, key: opened.get(row.id) };
  };

  const describe = (held: Held | undefined) => (held ? `${held.row.state} ${held.row.fingerprint || held.row.id.slice(0, 8)}` : "none");

  async function load(): Promise<void> {
    if (!options.database || !options.master) return;
    const began = changes;
    const during = writing > 0;
    const rows = await readProviderKeys(await options.database());
    if (began !== changes || during) return;
    const seen = new Set<string>();
    const next = new Map<string, ProviderState>();
    for (const row of rows) {
      seen.add(row.id);
      const state = next.get(row.provider) ?? { trying: false };
      state[row.slot] = hold(row, options.master);
      next.set(row.provider, state);
    }
    for (const [provider, state] of next) {
      const before = states.get(provider);
      // A trial in flight keeps its claim while its row is still the pending one.
      state.trying = before?.trying === true && before.next?.row.id === state.next?.row.id;
      if (describe(before?.active) !== describe(state.active) || describe(before?.next) !== describe(state.next)) logger.info({ event: "provider_key.loaded", provider, active: describe(state.active), next: describe(state.next) });
    }
    for (const provider of states.keys()) if (!next.has(provider)) logger.info({ event: "provider_key.loaded", provider, active: "none", next: "none" });
    states.clear();
    for (const [provider, state] of next) states.set(provider, state);
    for (const id of opened.keys()) if (!seen.has(id)) opened.delete(id);
  }

  const refresh = () => {
    refreshing ??= load().finally(() => {
      refreshing = undefined;
    });
    return refreshing;
  };
  /** A read that begins after this replica's last write (a read in flight may have begun before it). */
  const reread = async () => {
    changes++;
    await refreshing?.catch(() => undefined);
    await refresh();
  };

  const written = async <T>(write: () => Promise<T>): Promise<T> => {
    writing++;
    try {
      return await write();
    } finally {
      writing--;
    }
  };

  /** The trial of pending key `held` ended with `status`: 2xx promotes it, 401/403 rejects it, anything else leaves it pending. */
  async function settle(provider: string, held: Held, status: number): Promise<void> {
    const state = states.get(provider);
    const current = state?.next?.row.id === held.row.id;
    if (state && current) state.trying = false;
    const ok = status >= 200 && status <= 299;
    const refused = status === 401 || status === 403;
    const open = options.database;
    if (!current || (!ok && !refused) || !open) return;
    const fields = { provider, fingerprint: held.row.fingerprint, id: held.row.id };
    changes++;
    if (ok) {
      // This replica switches at once; the others on their next poll.
      state.active = { row: { ...held.row, slot: "active", state: "active", rotatedAt: Date.now() }, key: held.key };
      delete state.next;
      const promoted = await written(async () => promoteKey(await open(), provider, held.row.id));
      logger.info({ event: "provider_key.activated", ...fields }, "the new provider key was accepted and replaces the old one");
      if (promoted) trail.record({ actor: { kind: "system", id: replica }, action: "provider_key.activate", target: provider, outcome: "ok", details: { id: held.row.id, fingerprint: held.row.fingerprint } });
    } else {
      state.next = { row: { ...held.row, state: "rejected", rejectedStatus: status, rotatedAt: Date.now() }, key: held.key };
      const rejected = await written(async () => rejectKey(await open(), provider, held.row.id, status));
      logger.warn({ event: "provider_key.rejected", ...fields, status }, "the provider refused the new key; the key in use serves on");
      if (rejected) trail.record({ actor: { kind: "system", id: replica }, action: "provider_key.reject", target: provider, outcome: "failed", details: { id: held.row.id, fingerprint: held.row.fingerprint, status } });
    }
    await reread();
  }

  return {
    async set(provider, key) {
      const { database, master } = usable();
      const config = options.provider(provider);
      if (!config) throw new GatewayError("not_found", `no provider named ${provider} is configured`, { field: "provider" });
      if (!takesStoredKey(config.kind)) throw new GatewayError("invalid_request", `provider ${provider} (${config.kind}) authenticates with its credential chain, not an API key`, { field: "provider" });
      if (!KEY_SHAPE.test(key)) throw new GatewayError("invalid_request", "api_key: 8 to 4096 visible ASCII characters", { field: "api_key" });
      const id = randomUUID();
      const fingerprint = keyFingerprint(key);
      await insertPendingKey(await database(), { provider, id, sealed: sealProviderKey(key, provider, master), fingerprint });
      await reread();
      return { provider, fingerprint, state: "pending", createdAt: states.get(provider)?.next?.row.createdAt ?? Date.now() };
    },
    async list() {
      const { database } = usable();
      return (await readProviderKeys(await database())).map(infoOf);
    },
    async delete(provider) {
      const { database } = usable();
      const deleted = await deleteProviderKeys(await database(), provider);
      await reread();
      return deleted;
    },
    credentialFor(provider) {
      const state = states.get(provider);
      if (!state) return undefined;
      const active = state.active?.key;
      const next = state.next;
      if (next?.row.state !== "pending" || next.key === undefined || state.trying) return active === undefined ? undefined : { active };
      state.trying = true;
      const trial = {
        key: next.key,
        settle: (status: number) => {
          void settle(provider, next, status).catch((error: unknown) => logger.warn({ event: "provider_key.write_failed", provider, error: error instanceof Error ? error.message : "unknown" }));
        },
      };
      return active === undefined ? { trial } : { active, trial };
    },
    refresh,
    start(loaded) {
      if (!options.database || !options.master) return;
      let first = true;
      const tick = () => {
        if (closed) return;
        refresh()
          .then(() => {
            if (first) {
              first = false;
              loaded?.();
            }
          })
          .catch((error: unknown) => logger.warn({ event: "provider_key.poll_failed", error: error instanceof Error ? error.message : "unknown" }))
          .finally(() => {
            if (!closed) {
              timer = setTimeout(tick, options.pollMs);
              timer.unref();
            }
          });
      };
      tick();
    },
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
    },
  };
}
