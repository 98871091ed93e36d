import type { Database } from "./database.js";

/** One step of the schema, applied once, in version order. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  /**
   * An extension the step needs. On a server that does not offer it the
   * step waits (it is applied at a later start, once the extension is
   * installed) and the rest of the schema goes on: the ledger needs no
   * pgvector, and a PostgreSQL without it still keeps the ledger.
   */
  readonly requires?: "vector";
}

/**
 * The schema, as versioned steps: the same SQL on PGlite and on a server.
 * Append new steps; never edit an applied one. Statements are separated by
 * semicolons, which therefore never appear inside one.
 */
export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "pgvector", sql: "CREATE EXTENSION IF NOT EXISTS vector", requires: "vector" },
  {
    version: 2,
    name: "semantic cache",
    requires: "vector",
    // One table for every embedding size: `embedding` has no fixed dimensions, and each size gets a
    // partial HNSW index over a cast (semantic-store.ts), since an HNSW index needs one size.
    sql: `
      CREATE TABLE IF NOT EXISTS sluice_semantic_cache (
        id bigserial PRIMARY KEY,
        alias text NOT NULL,
        scope text NOT NULL,
        context text NOT NULL,
        dims integer NOT NULL,
        embedding vector NOT NULL,
        answer text NOT NULL,
        request_id text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX IF NOT EXISTS sluice_semantic_cache_scope ON sluice_semantic_cache (alias, scope, id);
      CREATE INDEX IF NOT EXISTS sluice_semantic_cache_expiry ON sluice_semantic_cache (expires_at);`,
  },
  {
    version: 3,
    name: "spend ledger",
    // One row per charged call, keyed by its admission id: a record written twice (a retried batch,
    // a batch claimed from a replica that died before acknowledging it) stays one row.
    sql: `
      CREATE TABLE IF NOT EXISTS sluice_ledger (
        id text PRIMARY KEY,
        at timestamptz NOT NULL,
        request_id text NOT NULL,
        key_name text NOT NULL,
        team text,
        business_line text,
        tags jsonb NOT NULL DEFAULT '{}'::jsonb,
        alias text NOT NULL,
        target text NOT NULL,
        input_tokens bigint NOT NULL,
        cached_input_tokens bigint NOT NULL,
        output_tokens bigint NOT NULL,
        reasoning_tokens bigint NOT NULL,
        cost_micros bigint NOT NULL,
        estimated boolean NOT NULL,
        cache text,
        saved_micros bigint NOT NULL DEFAULT 0,
        ttft_ms real,
        duration_ms real NOT NULL,
        outcome text NOT NULL,
        error_code text,
        replica text,
        written_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX IF NOT EXISTS sluice_ledger_at ON sluice_ledger (at);
      CREATE INDEX IF NOT EXISTS sluice_ledger_key_at ON sluice_ledger (key_name, at);
      CREATE INDEX IF NOT EXISTS sluice_ledger_team_at ON sluice_ledger (team, at);
      CREATE INDEX IF NOT EXISTS sluice_ledger_line_at ON sluice_ledger (business_line, at);
      CREATE INDEX IF NOT EXISTS sluice_ledger_alias_at ON sluice_ledger (alias, at)`,
  },
  {
    version: 4,
    name: "ledger refusals",
    // Requests refused before any provider was called, counted per UTC day, key, level and reason; one row
    // per replica, so replicas never contend for a row and a report sums them.
    sql: `
      CREATE TABLE IF NOT EXISTS sluice_ledger_refusals (
        day date NOT NULL,
        key_name text NOT NULL,
        level text NOT NULL,
        reason text NOT NULL,
        replica text NOT NULL,
        count bigint NOT NULL,
        PRIMARY KEY (day, key_name, level, reason, replica)
      )`,
  },
  {
    version: 5,
    name: "audit log",
    // One hash chain (src/audit/audit-chain.ts): seq is numbered by the appender under a lock, not by a sequence,
    // whose rolled-back numbers would look like deleted rows. No retention: the log is append-only. The head (one
    // row: the last seq and hash, moved in the append's transaction) shows rows cut from the end, which no chain can.
    sql: `
      CREATE TABLE IF NOT EXISTS sluice_audit (
        seq bigint PRIMARY KEY,
        id uuid UNIQUE NOT NULL,
        at timestamptz NOT NULL,
        actor_kind text NOT NULL,
        actor_id text NOT NULL,
        remote text,
        action text NOT NULL,
        target text,
        outcome text NOT NULL,
        request_id text,
        details jsonb,
        prev_hash text NOT NULL,
        hash text NOT NULL
      );
      CREATE INDEX IF NOT EXISTS sluice_audit_at ON sluice_audit (at);
      CREATE INDEX IF NOT EXISTS sluice_audit_action_seq ON sluice_audit (action, seq);
      CREATE INDEX IF NOT EXISTS sluice_audit_actor_seq ON sluice_audit (actor_id, seq);
      CREATE TABLE IF NOT EXISTS sluice_audit_head (
        one boolean PRIMARY KEY DEFAULT true CHECK (one),
        seq bigint NOT NULL,
        hash text NOT NULL
      )`,
  },
  {
    version: 6,
    name: "batches",
    // The OpenAI Batch API (src/batch/): uploaded and produced files, batches, and one row per line whose result is
    // written once (the update only where none is yet): a restarted gateway runs only the lines without one.
    // Times are epoch seconds, as the API shows them. owner: the SHA-256 of the key that made it ("" without keys).
    sql: `
      CREATE TABLE IF NOT EXISTS sluice_batch_files (
        id text PRIMARY KEY,
        owner text NOT NULL,
        purpose text NOT NULL,
        filename text NOT NULL,
        bytes bigint NOT NULL,
        content text NOT NULL,
        created_at bigint NOT NULL
      );
      CREATE TABLE IF NOT EXISTS sluice_batches (
        seq bigserial UNIQUE,
        id text PRIMARY KEY,
        owner text NOT NULL,
        endpoint text NOT NULL,
        input_file_id text NOT NULL,
        completion_window text NOT NULL,
        metadata jsonb,
        status text NOT NULL,
        total integer NOT NULL,
        completed integer NOT NULL DEFAULT 0,
        failed integer NOT NULL DEFAULT 0,
        output_file_id text,
        error_file_id text,
        created_at bigint NOT NULL,
        in_progress_at bigint,
        expires_at bigint,
        finalizing_at bigint,
        completed_at bigint,
        cancelling_at bigint,
        cancelled_at bigint
      );
      CREATE INDEX IF NOT EXISTS sluice_batches_owner_seq ON sluice_batches (owner, seq);
      CREATE INDEX IF NOT EXISTS sluice_batches_status ON sluice_batches (status);
      CREATE TABLE IF NOT EXISTS sluice_batch_lines (
        batch_id text NOT NULL,
        custom_id text NOT NULL,
        line integer NOT NULL,
        body text NOT NULL,
        status text,
        result text,
        PRIMARY KEY (batch_id, custom_id)
      );
      CREATE INDEX IF NOT EXISTS sluice_batch_lines_line ON sluice_batch_lines (batch_id, line)`,
  },
  {
    version: 7,
    name: "batches on a shared queue",
    // stopped: a line was refused for the key's budget, so the lines after it are written as not run.
    // skipped: lines never started because the batch was cancelled (status 'cancelled', no result).
    sql: `
      ALTER TABLE sluice_batches ADD COLUMN IF NOT EXISTS stopped boolean NOT NULL DEFAULT false;
      ALTER TABLE sluice_batches ADD COLUMN IF NOT EXISTS skipped integer NOT NULL DEFAULT 0`,
  },
  {
    version: 8,
    name: "evaluation replay",
    // request: the ChatRequest as its provider saw it (PII placeholders under a redact policy; secrets
    // always replaced). answer: the folded answer (answer-summary.ts). A dataset keeps the ids of its
    // recordings; an evaluation, one batch per candidate alias.
    sql: `
      CREATE TABLE IF NOT EXISTS sluice_recordings (
        id text PRIMARY KEY,
        at timestamptz NOT NULL,
        alias text NOT NULL,
        key_name text,
        tags jsonb NOT NULL DEFAULT '{}'::jsonb,
        request text NOT NULL,
        answer text NOT NULL
      );
      CREATE INDEX IF NOT EXISTS sluice_recordings_alias_at ON sluice_recordings (alias, at);
      CREATE TABLE IF NOT EXISTS sluice_datasets (
        name text PRIMARY KEY,
        created_at timestamptz NOT NULL DEFAULT now(),
        description text NOT NULL
      );
      CREATE TABLE IF NOT EXISTS sluice_dataset_items (
        dataset text NOT NULL REFERENCES sluice_datasets (name) ON DELETE CASCADE,
        recording_id text NOT NULL,
        PRIMARY KEY (dataset, recording_id)
      );
      CREATE TABLE IF NOT EXISTS sluice_evaluations (
        id text PRIMARY KEY,
        dataset text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        batches jsonb NOT NULL
      )`,
  },
  {
    version: 9,
    name: "shadow traffic",
    // One mirrored call: the live request and answer, and the candidate's answer or its error code.
    sql: `
      CREATE TABLE IF NOT EXISTS sluice_shadow (
        id text PRIMARY KEY,
        at timestamptz NOT NULL,
        alias text NOT NULL,
        candidate text NOT NULL,
        request text NOT NULL,
        live text NOT NULL,
        shadow text,
        error_code text
      );
      CREATE INDEX IF NOT EXISTS sluice_shadow_alias_at ON sluice_shadow (alias, at)`,
  },
  {
    version: 10,
    name: "semantic cache entries by the request that produced them",
    requires: "vector",
    // PurgeCache by entry id (the producing request's id, as a hit names it) finds its row without a scan.
    sql: "CREATE INDEX IF NOT EXISTS sluice_semantic_cache_request ON sluice_semantic_cache (request_id)",
  },
  {
    version: 11,
    name: "dead letters",
    // Records a writer's database refused several times (a NUL in a tag, a number out of range): kept aside so the
    // writer goes on (src/drain/isolate.ts). The payload is bytes: the text or jsonb that refused it would refuse it here.
    sql: `
      CREATE TABLE IF NOT EXISTS sluice_dead_letters (
        source text NOT NULL,
        entry_id text NOT NULL,
        at timestamptz NOT NULL DEFAULT now(),
        code text NOT NULL,
        payload bytea NOT NULL,
        PRIMARY KEY (source, entry_id)
      );
      CREATE INDEX IF NOT EXISTS sluice_dead_letters_at ON sluice_dead_letters (at)`,
  },
  {
    version: 12,
    name: "batch files in chunks",
    // A file is stored as it streams in, in line-aligned chunks of about a MiB (src/batch/batch-upload.ts), never as one
    // value held whole in the gateway's heap; it is read back chunk by chunk. A file is `complete` once every chunk is
    // in: until then no read sees it, and one left incomplete by a crash is swept after a day. Older files keep their
    // `content`. sluice_batch_uploads counts each key's uploaded bytes per UTC day (batch.maxUploadBytesPerDay).
    sql: `
      ALTER TABLE sluice_batch_files ALTER COLUMN content DROP NOT NULL;
      ALTER TABLE sluice_batch_files ADD COLUMN IF NOT EXISTS complete boolean NOT NULL DEFAULT true;
      CREATE INDEX IF NOT EXISTS sluice_batch_files_owner ON sluice_batch_files (owner, purpose);
      CREATE TABLE IF NOT EXISTS sluice_batch_file_chunks (
        file_id text NOT NULL REFERENCES sluice_batch_files (id) ON DELETE CASCADE,
        seq integer NOT NULL,
        content text NOT NULL,
        PRIMARY KEY (file_id, seq)
      );
      CREATE TABLE IF NOT EXISTS sluice_batch_uploads (
        owner text NOT NULL,
        day date NOT NULL,
        bytes bigint NOT NULL,
        PRIMARY KEY (owner, day)
      )`,
  },
  {
    version: 13,
    name: "ledger ids",
    // Who each call was charged to by id, beside the names people read: a key created under a revoked
    // key's name, or a team created again under a deleted one's, is another key or team. Rows written
    // before ids keep NULL here (their records carried names only; no id can be recovered for them).
    sql: `
      ALTER TABLE sluice_ledger ADD COLUMN IF NOT EXISTS key_id text;
      ALTER TABLE sluice_ledger ADD COLUMN IF NOT EXISTS team_id text;
      ALTER TABLE sluice_ledger ADD COLUMN IF NOT EXISTS business_line_id text;
      CREATE INDEX IF NOT EXISTS sluice_ledger_key_id_at ON sluice_ledger (key_id, at);
      CREATE INDEX IF NOT EXISTS sluice_ledger_team_id_at ON sluice_ledger (team_id, at)`,
  },
  {
    version: 14,
    name: "refusals by key id",
    // Refusal counts by key id too, so that two keys of one name on one day are two rows. Rows written
    // before ids have key_id '' (a key id is never empty).
    sql: `
      ALTER TABLE sluice_ledger_refusals ADD COLUMN IF NOT EXISTS key_id text NOT NULL DEFAULT '';
      ALTER TABLE sluice_ledger_refusals DROP CONSTRAINT IF EXISTS sluice_ledger_refusals_pkey;
      ALTER TABLE sluice_ledger_refusals ADD PRIMARY KEY (day, key_id, key_name, level, reason, replica)`,
  },
  {
    version: 15,
    name: "ledger: local and personal data found",
    // What the usage record already said of each call, now in the ledger too, so that spend served on local
    // targets and the personal data found (counts by detector, never values) can be reported over the same
    // years as the spend itself. Rows written before this version read local false and pii null.
    sql: `
      ALTER TABLE sluice_ledger ADD COLUMN IF NOT EXISTS local boolean NOT NULL DEFAULT false;
      ALTER TABLE sluice_ledger ADD COLUMN IF NOT EXISTS pii jsonb`,
  },
  {
    version: 16,
    name: "ledger: cache writes and the exact cost",
    // Anthropic bills prompt-cache writes above input (1.25x for five minutes, 2x for an hour): the ledger
    // keeps both counts (part of input_tokens, as cached_input_tokens is) and the cost exactly, in
    // pico-dollars, since a priced write (6.25 USD per million tokens) has no integer micro-dollar value.
    // cost_micros stays what budgets count (rounded up). Rows written before this version read 0 writes
    // and a null exact cost.
    sql: `
      ALTER TABLE sluice_ledger ADD COLUMN IF NOT EXISTS cache_write_5m_tokens bigint NOT NULL DEFAULT 0;
      ALTER TABLE sluice_ledger ADD COLUMN IF NOT EXISTS cache_write_1h_tokens bigint NOT NULL DEFAULT 0;
      ALTER TABLE sluice_ledger ADD COLUMN IF NOT EXISTS cost_picos bigint`,
  },
  {
    version: 17,
    name: "stored responses",
    // One row per stored response (docs/responses.md, "Storage"), keyed by a digest of its id: the id is
    // the secret its body is sealed under, so neither it nor any prompt or answer is kept in plaintext.
    // previous_hash links a chain for one recursive walk; owner (a key id) carries quota and purge.
    sql: `
      CREATE TABLE IF NOT EXISTS sluice_responses (
        id_hash text PRIMARY KEY,
        owner text NOT NULL,
        previous_hash text,
        status text NOT NULL,
        bytes integer NOT NULL,
        body text NOT NULL,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX IF NOT EXISTS sluice_responses_owner ON sluice_responses (owner);
      CREATE INDEX IF NOT EXISTS sluice_responses_expiry ON sluice_responses (expires_at)`,
  },
  {
    version: 18,
    name: "conversations",
    // The Conversations API (src/response-state/pg-conversation-store.ts): a row per conversation keyed by the SHA-256 of
    // its id (the id itself, which seals its rows, is never stored), its metadata sealed in body; a row per item, sealed,
    // at its place (seq). bytes: a conversation's sealed bytes with its items', for responses.maxStoredPerKey.
    // created_at in epoch seconds (as the API shows it), expires_at in epoch ms (responses.ttlDays after the last change).
    sql: `
      CREATE TABLE IF NOT EXISTS sluice_conversations (
        id_hash text PRIMARY KEY,
        owner text NOT NULL,
        bytes bigint NOT NULL,
        body text NOT NULL,
        next_seq integer NOT NULL DEFAULT 0,
        created_at bigint NOT NULL,
        expires_at bigint NOT NULL
      );
      CREATE INDEX IF NOT EXISTS sluice_conversations_owner ON sluice_conversations (owner);
      CREATE INDEX IF NOT EXISTS sluice_conversations_expiry ON sluice_conversations (expires_at);
      CREATE TABLE IF NOT EXISTS sluice_conversation_items (
        conversation text NOT NULL REFERENCES sluice_conversations (id_hash) ON DELETE CASCADE,
        seq integer NOT NULL,
        item text NOT NULL,
        bytes integer NOT NULL,
        PRIMARY KEY (conversation, seq)
      )`,
  },
  {
    version: 19,
    name: "ledger: tool calls",
    // MCP tool calls (mcp/accounting/) are charged and kept in the same ledger as model calls: kind says which, and
    // a tool row names its server, its exposed tool name and its result size. Rows written before this version read
    // as model rows (kind 'model', no tool columns). alias holds the exposed tool name on tool rows too.
    sql: `
      ALTER TABLE sluice_ledger ADD COLUMN IF NOT EXISTS kind text NOT NULL DEFAULT 'model';
      ALTER TABLE sluice_ledger ADD COLUMN IF NOT EXISTS tool_server text;
      ALTER TABLE sluice_ledger ADD COLUMN IF NOT EXISTS tool_name text;
      ALTER TABLE sluice_ledger ADD COLUMN IF NOT EXISTS result_bytes bigint;
      CREATE INDEX IF NOT EXISTS sluice_ledger_tool_at ON sluice_ledger (tool_server, at) WHERE kind = 'tool'`,
  },
  {
    version: 20,
    name: "ledger: searches and requests",
    // Every priced field has its count on the row (docs/model-catalog.md): hosted web searches (perWebSearch) and
    // upstream requests that answered (perRequest) join the token counts. Rows written before this version read 0
    // for both: neither was charged then.
    sql: `
      ALTER TABLE sluice_ledger ADD COLUMN IF NOT EXISTS web_searches bigint NOT NULL DEFAULT 0;
      ALTER TABLE sluice_ledger ADD COLUMN IF NOT EXISTS billed_requests bigint NOT NULL DEFAULT 0`,
  },
  {
    version: 21,
    name: "provider keys",
    // API keys set by the admin API (src/provider-keys/): at most two rows a provider, the key in use (slot 'active')
    // and the next one ('next', pending or rejected). sealed: AES-256-GCM under a key derived from the secret
    // mcp.credentialsKeyEnv names and the provider's name, so the table reads as nothing without it and a row copied
    // under another provider does not open. id names one key, so a promotion or refusal never lands on a newer one.
    sql: `
      CREATE TABLE IF NOT EXISTS sluice_provider_keys (
        provider text NOT NULL,
        slot text NOT NULL CHECK (slot IN ('active', 'next')),
        id text NOT NULL,
        sealed text NOT NULL,
        fingerprint text NOT NULL,
        state text NOT NULL CHECK (state IN ('active', 'pending', 'rejected')),
        rejected_status integer,
        created_at timestamptz NOT NULL,
        rotated_at timestamptz,
        PRIMARY KEY (provider, slot)
      )`,
  },
];

/** What a migration run did: the versions applied, and those waiting for an extension the server does not offer. */
export interface MigrationRun {
  readonly applied: number[];
  readonly waiting: ReadonlyArray<{ readonly version: number; readonly requires: string }>;
}

/**
 * Brings the schema up to date, under a transaction-scoped advisory lock
 * so that replicas starting together apply each step once. A step whose
 * extension the server lacks waits (see Migration.requires).
 */
export async function migrate(db: Database, migrations: readonly Migration[] = MIGRATIONS): Promise<MigrationRun> {
  return db.transaction(async (query) => {
    await query("SELECT pg_advisory_xact_lock(hashtext('sluice_migrations'))");
    await query("CREATE TABLE IF NOT EXISTS sluice_schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())");
    const done = new Set((await query<{ version: number }>("SELECT version FROM sluice_schema_migrations")).rows.map((r) => Number(r.version)));
    const offered = new Set((await query<{ name: string }>("SELECT name FROM pg_available_extensions WHERE name = ANY($1)", [["vector"]])).rows.map((r) => String(r.name)));
    const applied: number[] = [];
    const waiting: Array<{ version: number; requires: string }> = [];
    for (const step of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(step.version)) continue;
      if (step.requires !== undefined && !offered.has(step.requires)) {
        waiting.push({ version: step.version, requires: step.requires });
        continue;
      }
      // One statement per call: both drivers prepare what they are given, and a prepared statement holds one command.
      for (const statement of step.sql
        .split(";")
        .map((part) => part.trim())
        .filter(Boolean))
        await query(statement);
      await query("INSERT INTO sluice_schema_migrations (version, name) VALUES ($1, $2)", [step.version, step.name]);
      applied.push(step.version);
    }
    return { applied, waiting };
  });
}
