import { bounded, type Database } from "../db/database.js";

/** One row of sluice_provider_keys: a key, sealed, with what list shows of it. */
export interface ProviderKeyRow {
  readonly provider: string;
  readonly slot: "active" | "next";
  readonly id: string;
  readonly sealed: string;
  readonly fingerprint: string;
  readonly state: "active" | "pending" | "rejected";
  readonly rejectedStatus?: number;
  readonly createdAt: number;
  readonly rotatedAt?: number;
}

/** Longest one statement of this table may hold a connection. */
const STATEMENT_TIMEOUT_MS = 5_000;
/** Two rows a provider; far more providers than any configuration names. */
const MAX_ROWS = 2_000;

type Raw = Record<string, unknown>;

const msOf = (value: unknown): number | undefined => (value === null || value === undefined ? undefined : new Date(value as string | Date).getTime());

function rowOf(raw: Raw): ProviderKeyRow {
  const rejected = raw.rejected_status === null || raw.rejected_status === undefined ? undefined : Number(raw.rejected_status);
  const rotatedAt = msOf(raw.rotated_at);
  return {
    provider: String(raw.provider),
    slot: raw.slot === "active" ? "active" : "next",
    id: String(raw.id),
    sealed: String(raw.sealed),
    fingerprint: String(raw.fingerprint),
    state: raw.state === "active" ? "active" : raw.state === "rejected" ? "rejected" : "pending",
    ...(rejected === undefined ? {} : { rejectedStatus: rejected }),
    createdAt: msOf(raw.created_at) ?? 0,
    ...(rotatedAt === undefined ? {} : { rotatedAt }),
  };
}

/** Every stored key, by provider, the one in use first: what each replica's poll reads. */
export async function readProviderKeys(db: Database): Promise<ProviderKeyRow[]> {
  const { rows } = await bounded(db, STATEMENT_TIMEOUT_MS, (query) => query<Raw>(`SELECT * FROM sluice_provider_keys ORDER BY provider, slot LIMIT ${MAX_ROWS}`));
  return rows.map(rowOf);
}

/** A new key, pending: it replaces the provider's earlier pending or rejected one, never the one in use. */
export async function insertPendingKey(db: Database, row: { readonly provider: string; readonly id: string; readonly sealed: string; readonly fingerprint: string }): Promise<void> {
  await bounded(db, STATEMENT_TIMEOUT_MS, (query) =>
    query(
      `INSERT INTO sluice_provider_keys (provider, slot, id, sealed, fingerprint, state, created_at)
       VALUES ($1, 'next', $2, $3, $4, 'pending', now())
       ON CONFLICT (provider, slot) DO UPDATE SET id = $2, sealed = $3, fingerprint = $4, state = 'pending', rejected_status = NULL, created_at = now(), rotated_at = NULL`,
      [row.provider, row.id, row.sealed, row.fingerprint],
    ),
  );
}

/** The pending key `id` takes over and the old one is dropped; false when it is no longer the pending one (another replica did it, or a newer key was set). */
export async function promoteKey(db: Database, provider: string, id: string): Promise<boolean> {
  return bounded(db, STATEMENT_TIMEOUT_MS, async (query) => {
    const { rows } = await query(`SELECT id FROM sluice_provider_keys WHERE provider = $1 AND slot = 'next' AND id = $2 AND state = 'pending' FOR UPDATE`, [provider, id]);
    if (rows.length === 0) return false;
    await query(`DELETE FROM sluice_provider_keys WHERE provider = $1 AND slot = 'active'`, [provider]);
    await query(`UPDATE sluice_provider_keys SET slot = 'active', state = 'active', rotated_at = now() WHERE provider = $1 AND slot = 'next' AND id = $2`, [provider, id]);
    return true;
  });
}

/** The pending key `id` was refused by the provider: kept, as rejected, for list to show; false when it is no longer the pending one. */
export async function rejectKey(db: Database, provider: string, id: string, status: number): Promise<boolean> {
  const { rows } = await bounded(db, STATEMENT_TIMEOUT_MS, (query) =>
    query(`UPDATE sluice_provider_keys SET state = 'rejected', rejected_status = $3, rotated_at = now() WHERE provider = $1 AND slot = 'next' AND id = $2 AND state = 'pending' RETURNING id`, [provider, id, status]),
  );
  return rows.length > 0;
}

/** Both of a provider's rows; whether there were any. */
export async function deleteProviderKeys(db: Database, provider: string): Promise<boolean> {
  const { rows } = await bounded(db, STATEMENT_TIMEOUT_MS, (query) => query(`DELETE FROM sluice_provider_keys WHERE provider = $1 RETURNING id`, [provider]));
  return rows.length > 0;
}
