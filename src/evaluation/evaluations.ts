import type { BatchRunner } from "../batch/batch-runner.js";
import { type BatchStore, type PendingLine, randomHex } from "../batch/batch-store.js";
import type { ChatRequest } from "../core/chat-request.js";
import { quoteClientValue } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";
import type { Database } from "../db/database.js";
import type { AnswerSummary } from "../recording/answer-summary.js";
import { type AnswerStats, type CandidateComparison, compareCandidate, cosine, type Recorded, type Replayed, recordedStats, textPairs } from "./evaluation-report.js";
import { REPLAY_ENDPOINT, type ReplayLine, replayedOf } from "./replay-lines.js";

/** An evaluation's report: the recorded baseline and each candidate against it. */
export interface EvaluationReport {
  readonly id: string;
  readonly dataset: string;
  readonly finished: boolean;
  readonly recorded: AnswerStats;
  readonly candidates: ReadonlyArray<CandidateComparison & { readonly alias: string; readonly batchId: string; readonly batchStatus: string }>;
}

export interface DatasetInput {
  readonly name: string;
  readonly alias: string;
  readonly startMs?: number;
  readonly endMs?: number;
  /** `key:value`; empty: any. */
  readonly tag?: string;
  readonly limit?: number;
  readonly description?: string;
}

export interface Evaluations {
  createDataset(input: DatasetInput): Promise<{ readonly name: string; readonly size: number }>;
  start(input: { readonly dataset: string; readonly candidates: readonly string[]; readonly key?: string }): Promise<{ readonly id: string; readonly batches: Readonly<Record<string, string>>; readonly size: number }>;
  /** The report; with `embeddingModel`, each candidate's answers are embedded beside the recorded ones and compared by cosine. */
  report(id: string, options?: { readonly embeddingModel?: string }): Promise<EvaluationReport>;
}

export interface EvaluationsOptions {
  readonly database: () => Promise<Database>;
  readonly batches: BatchStore;
  readonly runner: BatchRunner;
  /** Whether `alias` is configured now. */
  readonly hasAlias: (alias: string) => boolean;
  /** The SHA-256 of the configured key named `name`; undefined when there is none. */
  readonly keySha256: (name: string) => string | undefined;
  /** Whether keys are configured (then an evaluation must name the key it runs as). */
  readonly keysConfigured: () => boolean;
  /** Lines of one batch at most (batch.maxLines): a dataset's size at most. */
  readonly maxLines: () => number;
  /**
   * Aliases and configured keys whose calls are kept local now
   * (compliance/pii-policy.ts keptLocalNames): their recordings are never
   * put in a dataset nor replayed, whenever they were made.
   */
  readonly keptLocal?: () => KeptLocal;
  /** Vectors of `texts` from embedding alias `model`, called as the key with SHA-256 `owner` ("" without keys). */
  readonly embed?: (model: string, texts: readonly string[], owner: string) => Promise<ReadonlyArray<ArrayLike<number>>>;
}

const NAME = /^[A-Za-z0-9._-]{1,64}$/;
/** Texts per embedding call, and characters kept of each answer: well inside an embedding request's limits. */
const EMBED_CHUNK = 256;
const EMBED_CHARS = 8_000;
const MAX_CANDIDATES = 8;
const invalid = (field: string, why: string) => new GatewayError("invalid_request", `${field}: ${why}`, { field });

type Row = Record<string, unknown>;

/** What stays home: recordings of these aliases or keys are left out. */
export interface KeptLocal {
  readonly aliases: readonly string[];
  readonly keyNames: readonly string[];
}

const NOTHING_LOCAL: KeptLocal = { aliases: [], keyNames: [] };

/** Rows of a dataset's recordings, oldest first, without those of aliases and keys kept local now. */
async function recordingsOf(db: Database, dataset: string, local: KeptLocal): Promise<Recorded[]> {
  const { rows } = await db.query<{ id: string; request: string; answer: string }>(
    `SELECT r.id, r.request, r.answer FROM sluice_dataset_items d JOIN sluice_recordings r ON r.id = d.recording_id
     WHERE d.dataset = $1 AND NOT (r.alias = ANY($2::text[])) AND NOT (coalesce(r.key_name, '') = ANY($3::text[]))
     ORDER BY r.at, r.id`,
    [dataset, local.aliases, local.keyNames],
  );
  return rows.map((r) => ({ id: String(r.id), request: JSON.parse(String(r.request)) as ChatRequest, answer: JSON.parse(String(r.answer)) as AnswerSummary }));
}

/** The mean cosine of each pair's embeddings, embedded in chunks (the recorded text and the replayed one side by side). */
async function semanticSimilarity(
  pairs: ReadonlyArray<readonly [string, string]>,
  model: string,
  owner: string,
  embed: NonNullable<EvaluationsOptions["embed"]>,
): Promise<{ readonly semanticSimilarity?: number; readonly semanticCases: number }> {
  let sum = 0;
  for (let at = 0; at < pairs.length; at += EMBED_CHUNK / 2) {
    const chunk = pairs.slice(at, at + EMBED_CHUNK / 2);
    const vectors = await embed(
      model,
      chunk.flat().map((text) => text.slice(0, EMBED_CHARS)),
      owner,
    );
    for (let i = 0; i < chunk.length; i++) sum += cosine(vectors[2 * i]!, vectors[2 * i + 1]!);
  }
  return pairs.length === 0 ? { semanticCases: 0 } : { semanticSimilarity: sum / pairs.length, semanticCases: pairs.length };
}

/**
 * Evaluation replay (docs/evaluation.md): datasets of recorded calls,
 * replayed against candidate aliases as batches (so on the batch queue,
 * at batch priority, as one key with its limits and budget), and the
 * report comparing each candidate's answers with the recorded ones.
 */
export function createEvaluations(options: EvaluationsOptions): Evaluations {
  const keptLocal = () => options.keptLocal?.() ?? NOTHING_LOCAL;
  return {
    async createDataset(input) {
      if (!NAME.test(input.name)) throw invalid("name", "letters, digits, '.', '_' and '-', at most 64");
      if (input.alias === "") throw invalid("alias", "required");
      const max = options.maxLines();
      const limit = input.limit === undefined || input.limit === 0 ? max : input.limit;
      if (limit > max) throw invalid("limit", `at most ${max} (batch.maxLines)`);
      let tag: [string, string] | undefined;
      if (input.tag) {
        const colon = input.tag.indexOf(":");
        if (colon <= 0) throw invalid("tag", "write key:value");
        tag = [input.tag.slice(0, colon), input.tag.slice(colon + 1)];
      }
      const local = keptLocal();
      if (local.aliases.includes(input.alias)) throw new GatewayError("failed_precondition", `alias ${quoteClientValue(input.alias)} is local-only: its calls are never kept for replay`);
      const db = await options.database();
      return db.transaction(async (query) => {
        const made = await query("INSERT INTO sluice_datasets (name, description) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING name", [input.name, (input.description ?? "").slice(0, 1_000)]);
        if (made.rows.length === 0) throw new GatewayError("already_exists", `dataset ${quoteClientValue(input.name)} exists`);
        const { rows } = await query<{ n: number }>(
          `WITH picked AS (
             SELECT id FROM sluice_recordings
             WHERE alias = $2
               AND ($3::timestamptz IS NULL OR at >= $3) AND ($4::timestamptz IS NULL OR at < $4)
               AND ($5::text IS NULL OR tags ->> $5 = $6)
               AND NOT (coalesce(key_name, '') = ANY($8::text[]))
             ORDER BY at, id LIMIT $7)
           , added AS (INSERT INTO sluice_dataset_items (dataset, recording_id) SELECT $1, id FROM picked RETURNING 1)
           SELECT count(*)::int AS n FROM added`,
          [
            input.name,
            input.alias,
            input.startMs === undefined ? null : new Date(input.startMs).toISOString(),
            input.endMs === undefined ? null : new Date(input.endMs).toISOString(),
            tag?.[0] ?? null,
            tag?.[1] ?? null,
            limit,
            local.keyNames,
          ],
        );
        const size = Number(rows[0]?.n ?? 0);
        if (size === 0) throw new GatewayError("failed_precondition", `no recording of alias ${quoteClientValue(input.alias)} matches: record it first (models.<alias>.record)`);
        return { name: input.name, size };
      });
    },

    async start(input) {
      const candidates = [...input.candidates];
      if (candidates.length === 0 || candidates.length > MAX_CANDIDATES) throw invalid("candidates", `one to ${MAX_CANDIDATES} aliases`);
      if (new Set(candidates).size !== candidates.length) throw invalid("candidates", "each alias once");
      for (const alias of candidates) if (!options.hasAlias(alias)) throw new GatewayError("not_found", `no model alias ${quoteClientValue(alias)}`);
      let owner = "";
      if (input.key) {
        const sha = options.keySha256(input.key);
        if (!sha) throw new GatewayError("not_found", `no configured key ${quoteClientValue(input.key)}`);
        owner = sha;
      } else if (options.keysConfigured()) {
        throw new GatewayError("failed_precondition", "key: name the configured key the replays run as and are charged to");
      }
      const db = await options.database();
      const recorded = await recordingsOf(db, input.dataset, keptLocal());
      if (recorded.length === 0) {
        const exists = await db.query("SELECT 1 FROM sluice_datasets WHERE name = $1", [input.dataset]);
        if (exists.rows.length === 0) throw new GatewayError("not_found", `no dataset ${quoteClientValue(input.dataset)}`);
        throw new GatewayError("failed_precondition", `dataset ${quoteClientValue(input.dataset)} holds only recordings of aliases or keys that are local-only now: they are never replayed`);
      }
      const id = `eval_${randomHex()}`;
      const batches: Record<string, string> = Object.fromEntries(candidates.map((alias) => [alias, `batch_${randomHex()}`]));
      // The evaluation first: a batch made after it is always one of its own (a failure half-way leaves it
      // reporting the candidates it has, never a batch that belongs to nothing).
      await db.query("INSERT INTO sluice_evaluations (id, dataset, batches) VALUES ($1, $2, $3)", [id, input.dataset, JSON.stringify(candidates.map((alias) => ({ alias, batch: batches[alias] })))]);
      for (const alias of candidates) {
        const lines: PendingLine[] = recorded.map((r, i) => ({ customId: r.id, line: i + 1, body: JSON.stringify({ request: { ...r.request, model: alias } } satisfies ReplayLine) }));
        await options.batches.createBatch({ id: batches[alias]!, owner, endpoint: REPLAY_ENDPOINT, inputFileId: "", completionWindow: "24h", metadata: { evaluation: id, dataset: input.dataset, candidate: alias } }, lines);
        options.runner.add(batches[alias]!);
      }
      return { id, batches, size: recorded.length };
    },

    async report(id, reportOptions = {}) {
      const { embeddingModel } = reportOptions;
      if (embeddingModel !== undefined && !options.hasAlias(embeddingModel)) throw new GatewayError("not_found", `no model alias ${quoteClientValue(embeddingModel)}`);
      const db = await options.database();
      const { rows } = await db.query<Row>("SELECT dataset, batches FROM sluice_evaluations WHERE id = $1", [id]);
      const row = rows[0];
      if (!row) throw new GatewayError("not_found", `no evaluation ${quoteClientValue(id)}`);
      const dataset = String(row.dataset);
      const plan = (typeof row.batches === "string" ? JSON.parse(row.batches) : row.batches) as Array<{ alias: string; batch: string }>;
      const recorded = await recordingsOf(db, dataset, keptLocal());
      const candidates = [];
      let finished = true;
      for (const { alias, batch: batchId } of plan) {
        const batch = await options.batches.batch(batchId);
        const status = batch?.status ?? "unknown";
        if (status === "in_progress" || status === "cancelling" || status === "validating" || status === "finalizing") finished = false;
        const results = await db.query<{ result: string }>("SELECT result FROM sluice_batch_lines WHERE batch_id = $1 AND result IS NOT NULL", [batchId]);
        const replayed = new Map<string, Replayed>();
        for (const r of results.rows) {
          const entry = replayedOf(String(r.result));
          if (entry) replayed.set(...entry);
        }
        const similarity = embeddingModel !== undefined && options.embed ? await semanticSimilarity(textPairs(recorded, replayed), embeddingModel, batch?.owner ?? "", options.embed) : undefined;
        candidates.push({ alias, batchId, batchStatus: status, ...compareCandidate(recorded, replayed), ...similarity });
      }
      return { id, dataset, finished, recorded: recordedStats(recorded), candidates };
    },
  };
}
