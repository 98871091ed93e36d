import { GatewayError } from "../../core/errors.js";

/**
 * Where sealed per-key tokens are kept, by binding digest
 * (credential-seal.ts): runtime state, like runtime keys, so in the
 * shared store (Redis, every replica) when there is one, else in this
 * process. Entries are opaque to the store and expire with their token.
 */
export interface CredentialStore {
  put(digest: string, sealed: string, expiresAt: number): Promise<void>;
  get(digest: string): Promise<string | undefined>;
  /** Whether there was one. */
  delete(digest: string): Promise<boolean>;
}

/** Tokens held in one process at most: runtime keys (10,000) times a few per-key servers. */
export const MAX_MEMORY_CREDENTIALS = 100_000;

/** One replica's store (no Redis configured): bounded, expired entries swept when it fills. */
export function createMemoryCredentialStore(now: () => number, maxEntries = MAX_MEMORY_CREDENTIALS): CredentialStore {
  const entries = new Map<string, { readonly sealed: string; readonly expiresAt: number }>();
  const sweep = () => {
    const at = now();
    for (const [digest, entry] of entries) if (entry.expiresAt <= at) entries.delete(digest);
  };
  return {
    async put(digest, sealed, expiresAt) {
      if (!entries.has(digest) && entries.size >= maxEntries) sweep();
      if (!entries.has(digest) && entries.size >= maxEntries) throw new GatewayError("failed_precondition", `the gateway holds ${maxEntries} MCP credentials already: delete some, or configure store.redis`);
      entries.set(digest, { sealed, expiresAt });
    },
    async get(digest) {
      const entry = entries.get(digest);
      if (entry === undefined) return undefined;
      if (entry.expiresAt > now()) return entry.sealed;
      entries.delete(digest);
      return undefined;
    },
    async delete(digest) {
      return entries.delete(digest);
    },
  };
}
