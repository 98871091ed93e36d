import { randomBytes } from "node:crypto";
import { quoteClientValue } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";
import type { Database } from "../db/database.js";
import { writeDeadLetters } from "../drain/dead-letters.js";
import type { DeadLetter } from "../drain/isolate.js";

/** A batch's state, as the OpenAI Batch API names it. */
export type BatchStatus = "validating" | "in_progress" | "finalizing" | "completed" | "failed" | "cancelling" | "cancelled" | "expired";

/** States a batch is still working in: they count against the key's limit, and a restart resumes them. */
export const UNFINISHED: readonly BatchStatus[] = ["validating", "in_progress", "finalizing", "cancelling"];

export interface StoredFile {
  readonly id: string;
  /** SHA-256 of the key that made it ("" without keys). */
  readonly owner: string;
  readonly purpose: string;
  readonly filename: string;
  readonly bytes: number;
  readonly createdAt: number;
}

export interface StoredBatch {
  readonly id: string;
  readonly owner: string;
  readonly endpoint: string;
  readonly inputFileId: string;
  readonly completionWindow: string;
  readonly metadata: Readonly<Record<string, string>> | null;
  readonly status: BatchStatus;
  readonly counts: { readonly total: number; readonly completed: number; readonly failed: number };
  /** Lines never started because the batch was cancelled (shared queue only). */
  readonly skipped: number;
  /** A line was refused for the key's budget: the lines not yet run are written as not run. */
  readonly stopped: boolean;
  readonly outputFileId: string | null;
  readonly errorFileId: string | null;
  /** Epoch seconds, as the API shows them; null: not reached. */
  readonly times: {
    readonly createdAt: number;
    readonly inProgressAt: number | null;
    readonly expiresAt: number | null;
    readonly finalizingAt: number | null;
    readonly completedAt: number | null;
    readonly cancellingAt: number | null;
    readonly cancelledAt: number | null;
  };
}

/** One line of a batch waiting for its result. */
export interface PendingLine {
  readonly customId: string;
  /** Its place in the input file (1-based). */
  readonly line: number;
  /** The request body, as uploaded. */
  readonly body: string;
}

/** One line as the shared queue's worker reads it: done when it has a result or was skipped. */
export interface StoredLine extends PendingLine {
  readonly done: boolean;
}

/** A line's result: the output (or error) file's line, and which file it goes to. */
export interface LineResult {
  readonly ok: boolean;
  /** One JSONL line, without its newline. */
  readonly text: string;
}

type Row = Record<string, unknown>;

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const seconds = (): number => Math.floor(Date.now() / 1000);

function fileOf(r: Row): StoredFile {
  return { id: String(r.id), owner: String(r.owner), purpose: String(r.purpose), filename: String(r.filename), bytes: Number(r.bytes), createdAt: Number(r.created_at) };
}

function batchOf(r: Row): StoredBatch {
  return {
    id: String(r.id),
    owner: String(r.owner),
    endpoint: String(r.endpoint),
    inputFileId: String(r.input_file_id),
    completionWindow: String(r.completion_window),
    metadata: (r.metadata ?? null) as StoredBatch["metadata"],
    status: String(r.status) as BatchStatus,
    counts: { total: Number(r.total), completed: Number(r.completed), failed: Number(r.failed) },
    skipped: Number(r.skipped ?? 0),
    stopped: r.stopped === true,
    outputFileId: r.output_file_id === null || r.output_file_id === undefined ? null : String(r.output_file_id),
    errorFileId: r.error_file_id === null || r.error_file_id === undefined ? null : String(r.error_file_id),
    times: {
      createdAt: Number(r.created_at),
      inProgressAt: num(r.in_progress_at),
      expiresAt: num(r.expires_at),
      finalizingAt: num(r.finalizing_at),
      completedAt: num(r.completed_at),
      cancellingAt: num(r.cancelling_at),
      cancelledAt: num(r.cancelled_at),
    },
  };
}

/** Lines inserted per statement when a batch is created. */
const INSERT_CHUNK = 1_000;

/**
 * Files, batches and line results in the database (migration 6). Every
 * read that a caller asks for names the owner: a key finds only its own.
 */
export interface BatchStore {
  /** Starts a file that streams in: invisible to every read until completeFile. */
  beginFile(file: Pick<StoredFile, "id" | "owner" | "purpose">): Promise<void>;
  /** Stores chunk `seq` of a file being written (line-aligned text). */
  putChunk(fileId: string, seq: number, content: string): Promise<void>;
  /** Makes a file that streamed in visible, with its name and size. */
  completeFile(id: string, filename: string, bytes: number): Promise<StoredFile>;
  /** Removes a file and its chunks; false when `owner` has no such file. */
  deleteFile(id: string, owner: string): Promise<boolean>;
  /** Files of `purpose` that `owner` stores, complete or streaming in. */
  countFiles(owner: string, purpose: string): Promise<number>;
  /** Adds `bytes` to what `owner` uploaded this UTC day; resolves with the day's total. */
  addUploadBytes(owner: string, bytes: number): Promise<number>;
  /** What `owner` uploaded this UTC day. */
  uploadedToday(owner: string): Promise<number>;
  /** Removes files left streaming in (a gateway stopped mid-upload) for more than a day, and upload counts of past days. */
  sweepUploads(): Promise<void>;
  file(id: string, owner: string): Promise<StoredFile | undefined>;
  /** A complete file's text, a chunk at a time; undefined when `owner` has no such file. */
  fileChunks(id: string, owner: string): Promise<AsyncIterable<string> | undefined>;
  /** Batches of `owner` not yet finished. */
  unfinished(owner: string): Promise<number>;
  /**
   * Stores a batch in progress from its input file, in one transaction:
   * `lines` turns the file's chunks (read through the transaction) into
   * pages of lines, checking them; a throw leaves nothing stored.
   */
  createBatchFromFile(
    batch: { id: string; owner: string; endpoint: string; inputFileId: string; completionWindow: string; metadata: Record<string, string> | null },
    lines: (chunks: AsyncIterable<string>) => AsyncIterable<readonly PendingLine[]>,
  ): Promise<StoredBatch>;
  /** Stores the batch in progress with all its lines. */
  createBatch(batch: { id: string; owner: string; endpoint: string; inputFileId: string; completionWindow: string; metadata: Record<string, string> | null }, lines: readonly PendingLine[]): Promise<StoredBatch>;
  batch(id: string, owner?: string): Promise<StoredBatch | undefined>;
  /** `owner`'s batches (every owner's when undefined: the admin's view), newest first, after the one with id `after`. */
  list(owner: string | undefined, after: string | undefined, limit: number): Promise<{ readonly batches: StoredBatch[]; readonly hasMore: boolean }>;
  /** Ids of batches a previous process left unfinished, oldest first. */
  resumable(): Promise<string[]>;
  /** Up to `limit` lines without a result, after line `after`, in file order. */
  pending(batchId: string, after: number, limit: number): Promise<PendingLine[]>;
  /** Writes a line's result unless it has one, and counts it; false: it had one already. */
  finishLine(batchId: string, customId: string, result: LineResult): Promise<boolean>;
  /** One line by its place in the file (the shared queue's job names it so). */
  line(batchId: string, line: number): Promise<StoredLine | undefined>;
  /** Marks a line never started, the batch being cancelled; false: it had a result or was skipped already. */
  skipLine(batchId: string, customId: string): Promise<boolean>;
  /** Marks every line not started (nor running) of a cancelled batch skipped, in one statement; resolves with how many. */
  skipRest(batchId: string): Promise<number>;
  /** Claims a line for running; false: it has a result or was skipped (a cancel came first). */
  markRunning(batchId: string, customId: string): Promise<boolean>;
  /** Records that a line was refused for the key's budget: the lines not yet run are written as not run. */
  stop(batchId: string): Promise<void>;
  /** Finishes the batch when every line has a result or was skipped; undefined when it is not settled (or gone). */
  finishIfSettled(id: string): Promise<StoredBatch | undefined>;
  /** Every line still without a result gets `result(line)` as a failure (a batch stopped by its budget). */
  failRest(batchId: string, result: (line: PendingLine) => LineResult): Promise<number>;
  /** Marks the batch cancelling; undefined when `owner` has no such batch; unchanged when it is past cancelling. */
  cancel(id: string, owner: string): Promise<StoredBatch | undefined>;
  /** Writes the output and error files from the lines' results and ends the batch `completed` or `cancelled`. */
  finish(id: string): Promise<StoredBatch | undefined>;
  /** Keeps results the database refused in the dead letters (line-writer.ts). */
  deadLetter(letters: readonly DeadLetter[]): Promise<ReadonlySet<string>>;
}

export function createBatchStore(db: () => Promise<Database>): BatchStore {
  const store: BatchStore = {
    async beginFile(file) {
      await (await db()).query("INSERT INTO sluice_batch_files (id, owner, purpose, filename, bytes, content, created_at, complete) VALUES ($1, $2, $3, '', 0, NULL, $4, false)", [file.id, file.owner, file.purpose, seconds()]);
    },

    async putChunk(fileId, seq, content) {
      await (await db()).query("INSERT INTO sluice_batch_file_chunks (file_id, seq, content) VALUES ($1, $2, $3)", [fileId, seq, content]);
    },

    async completeFile(id, filename, bytes) {
      const { rows } = await (await db()).query("UPDATE sluice_batch_files SET filename = $2, bytes = $3, complete = true WHERE id = $1 RETURNING id, owner, purpose, filename, bytes, created_at", [id, filename, bytes]);
      if (!rows[0]) throw new Error("the file being written is gone");
      return fileOf(rows[0]);
    },

    async deleteFile(id, owner) {
      const { rows } = await (await db()).query("DELETE FROM sluice_batch_files WHERE id = $1 AND owner = $2 RETURNING id", [id, owner]);
      return rows.length > 0;
    },

    async countFiles(owner, purpose) {
      const { rows } = await (await db()).query<{ n: number }>("SELECT count(*)::int AS n FROM sluice_batch_files WHERE owner = $1 AND purpose = $2", [owner, purpose]);
      return Number(rows[0]?.n ?? 0);
    },

    async addUploadBytes(owner, bytes) {
      const { rows } = await (await db()).query<{ bytes: string | number }>(
        "INSERT INTO sluice_batch_uploads (owner, day, bytes) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2) ON CONFLICT (owner, day) DO UPDATE SET bytes = sluice_batch_uploads.bytes + excluded.bytes RETURNING bytes",
        [owner, bytes],
      );
      return Number(rows[0]?.bytes ?? bytes);
    },

    async uploadedToday(owner) {
      const { rows } = await (await db()).query<{ bytes: string | number }>("SELECT bytes FROM sluice_batch_uploads WHERE owner = $1 AND day = (now() AT TIME ZONE 'UTC')::date", [owner]);
      return Number(rows[0]?.bytes ?? 0);
    },

    async sweepUploads() {
      const database = await db();
      await database.query("DELETE FROM sluice_batch_files WHERE complete = false AND created_at < $1", [seconds() - 86_400]);
      await database.query("DELETE FROM sluice_batch_uploads WHERE day < (now() AT TIME ZONE 'UTC')::date - 1");
    },

    async file(id, owner) {
      const { rows } = await (await db()).query("SELECT id, owner, purpose, filename, bytes, created_at FROM sluice_batch_files WHERE id = $1 AND owner = $2 AND complete", [id, owner]);
      return rows[0] ? fileOf(rows[0]) : undefined;
    },

    async fileChunks(id, owner) {
      const database = await db();
      const { rows } = await database.query<{ content: string | null }>("SELECT content FROM sluice_batch_files WHERE id = $1 AND owner = $2 AND complete", [id, owner]);
      if (!rows[0]) return undefined;
      const whole = rows[0].content;
      return whole !== null ? oneChunk(whole) : chunksOf((sql, params) => database.query(sql, params), id);
    },

    async unfinished(owner) {
      const { rows } = await (await db()).query<{ n: number }>("SELECT count(*)::int AS n FROM sluice_batches WHERE owner = $1 AND status = ANY($2)", [owner, UNFINISHED]);
      return Number(rows[0]?.n ?? 0);
    },

    async createBatchFromFile(batch, lines) {
      const now = seconds();
      const database = await db();
      const rows = await database.transaction(async (query) => {
        // FOR SHARE: a delete of the file waits for this batch's lines, so none is read from a file half gone.
        const { rows: file } = await query<{ content: string | null }>("SELECT content FROM sluice_batch_files WHERE id = $1 AND owner = $2 AND complete FOR SHARE", [batch.inputFileId, batch.owner]);
        if (!file[0]) throw new GatewayError("not_found", `no batch input file ${quoteClientValue(batch.inputFileId)}`);
        await query(
          `INSERT INTO sluice_batches (id, owner, endpoint, input_file_id, completion_window, metadata, status, total, created_at, in_progress_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, 'in_progress', 0, $7, $7, $8)`,
          [batch.id, batch.owner, batch.endpoint, batch.inputFileId, batch.completionWindow, batch.metadata === null ? null : JSON.stringify(batch.metadata), now, now + 24 * 3600],
        );
        const whole = file[0].content;
        let total = 0;
        for await (const page of lines(whole !== null ? oneChunk(whole) : chunksOf(query, batch.inputFileId))) {
          await insertLines(query, batch.id, page);
          total += page.length;
        }
        return (await query("UPDATE sluice_batches SET total = $2 WHERE id = $1 RETURNING *", [batch.id, total])).rows;
      });
      return batchOf(rows[0]!);
    },

    async createBatch(batch, lines) {
      const now = seconds();
      const database = await db();
      const rows = await database.transaction(async (query) => {
        const created = await query(
          `INSERT INTO sluice_batches (id, owner, endpoint, input_file_id, completion_window, metadata, status, total, created_at, in_progress_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, 'in_progress', $7, $8, $8, $9) RETURNING *`,
          [batch.id, batch.owner, batch.endpoint, batch.inputFileId, batch.completionWindow, batch.metadata === null ? null : JSON.stringify(batch.metadata), lines.length, now, now + 24 * 3600],
        );
        for (let at = 0; at < lines.length; at += INSERT_CHUNK) await insertLines(query, batch.id, lines.slice(at, at + INSERT_CHUNK));
        return created.rows;
      });
      return batchOf(rows[0]!);
    },

    async batch(id, owner) {
      const { rows } = await (await db()).query(owner === undefined ? "SELECT * FROM sluice_batches WHERE id = $1" : "SELECT * FROM sluice_batches WHERE id = $1 AND owner = $2", owner === undefined ? [id] : [id, owner]);
      return rows[0] ? batchOf(rows[0]) : undefined;
    },

    async list(owner, after, limit) {
      const { rows } = await (await db()).query(
        `SELECT * FROM sluice_batches WHERE ($1::text IS NULL OR owner = $1)
           AND ($2::text IS NULL OR seq < (SELECT seq FROM sluice_batches WHERE id = $2 AND ($1::text IS NULL OR owner = $1)))
         ORDER BY seq DESC LIMIT $3`,
        [owner ?? null, after ?? null, limit + 1],
      );
      return { batches: rows.slice(0, limit).map(batchOf), hasMore: rows.length > limit };
    },

    async resumable() {
      const { rows } = await (await db()).query<{ id: string }>("SELECT id FROM sluice_batches WHERE status = ANY($1) ORDER BY seq", [UNFINISHED]);
      return rows.map((r) => String(r.id));
    },

    async pending(batchId, after, limit) {
      const { rows } = await (await db()).query<{ custom_id: string; line: number; body: string }>(
        "SELECT custom_id, line, body FROM sluice_batch_lines WHERE batch_id = $1 AND line > $2 AND result IS NULL AND status IS DISTINCT FROM 'cancelled' ORDER BY line LIMIT $3",
        [batchId, after, limit],
      );
      return rows.map((r) => ({ customId: String(r.custom_id), line: Number(r.line), body: String(r.body) }));
    },

    async finishLine(batchId, customId, result) {
      return (await db()).transaction(async (query) => {
        // A line skipped by a cancel stays skipped: counting it again would end the batch before its running lines.
        const { rows } = await query("UPDATE sluice_batch_lines SET status = $3, result = $4 WHERE batch_id = $1 AND custom_id = $2 AND result IS NULL AND status IS DISTINCT FROM 'cancelled' RETURNING line", [
          batchId,
          customId,
          result.ok ? "completed" : "failed",
          result.text,
        ]);
        if (rows.length === 0) return false;
        await query(result.ok ? "UPDATE sluice_batches SET completed = completed + 1 WHERE id = $1" : "UPDATE sluice_batches SET failed = failed + 1 WHERE id = $1", [batchId]);
        return true;
      });
    },

    async line(batchId, line) {
      const { rows } = await (await db()).query<{ custom_id: string; line: number; body: string; status: string | null; result: string | null }>(
        "SELECT custom_id, line, body, status, result FROM sluice_batch_lines WHERE batch_id = $1 AND line = $2",
        [batchId, line],
      );
      const r = rows[0];
      return r ? { customId: String(r.custom_id), line: Number(r.line), body: String(r.body), done: r.result !== null || r.status === "cancelled" } : undefined;
    },

    async skipLine(batchId, customId) {
      return (await db()).transaction(async (query) => {
        const { rows } = await query("UPDATE sluice_batch_lines SET status = 'cancelled' WHERE batch_id = $1 AND custom_id = $2 AND result IS NULL AND status IS DISTINCT FROM 'cancelled' RETURNING line", [batchId, customId]);
        if (rows.length === 0) return false;
        await query("UPDATE sluice_batches SET skipped = skipped + 1 WHERE id = $1", [batchId]);
        return true;
      });
    },

    async skipRest(batchId) {
      return (await db()).transaction(async (query) => {
        const { rows } = await query<{ n: number }>("WITH skipped AS (UPDATE sluice_batch_lines SET status = 'cancelled' WHERE batch_id = $1 AND result IS NULL AND status IS NULL RETURNING 1) SELECT count(*)::int AS n FROM skipped", [
          batchId,
        ]);
        const n = Number(rows[0]?.n ?? 0);
        if (n > 0) await query("UPDATE sluice_batches SET skipped = skipped + $2 WHERE id = $1", [batchId, n]);
        return n;
      });
    },

    async markRunning(batchId, customId) {
      const { rows } = await (await db()).query("UPDATE sluice_batch_lines SET status = 'running' WHERE batch_id = $1 AND custom_id = $2 AND result IS NULL AND status IS DISTINCT FROM 'cancelled' RETURNING line", [batchId, customId]);
      return rows.length > 0;
    },

    async stop(batchId) {
      await (await db()).query("UPDATE sluice_batches SET stopped = true WHERE id = $1", [batchId]);
    },

    async finishIfSettled(id) {
      const { rows } = await (await db()).query("SELECT * FROM sluice_batches WHERE id = $1", [id]);
      if (!rows[0]) return undefined;
      const batch = batchOf(rows[0]);
      if (batch.counts.completed + batch.counts.failed + batch.skipped < batch.counts.total) return undefined;
      return store.finish(id);
    },

    async failRest(batchId, result) {
      return (await db()).transaction(async (query) => {
        const { rows } = await query<{ custom_id: string; line: number; body: string }>("SELECT custom_id, line, body FROM sluice_batch_lines WHERE batch_id = $1 AND result IS NULL ORDER BY line FOR UPDATE", [batchId]);
        if (rows.length === 0) return 0;
        const lines = rows.map((r) => ({ customId: String(r.custom_id), line: Number(r.line), body: String(r.body) }));
        for (let at = 0; at < lines.length; at += INSERT_CHUNK) {
          const chunk = lines.slice(at, at + INSERT_CHUNK);
          await query(
            `UPDATE sluice_batch_lines AS l SET status = 'failed', result = r.result
               FROM unnest($2::text[], $3::text[]) AS r(custom_id, result)
             WHERE l.batch_id = $1 AND l.custom_id = r.custom_id AND l.result IS NULL`,
            [batchId, chunk.map((l) => l.customId), chunk.map((l) => result(l).text)],
          );
        }
        await query("UPDATE sluice_batches SET failed = failed + $2 WHERE id = $1", [batchId, lines.length]);
        return lines.length;
      });
    },

    async cancel(id, owner) {
      const database = await db();
      await database.query("UPDATE sluice_batches SET status = 'cancelling', cancelling_at = $3 WHERE id = $1 AND owner = $2 AND status IN ('validating', 'in_progress')", [id, owner, seconds()]);
      const { rows } = await database.query("SELECT * FROM sluice_batches WHERE id = $1 AND owner = $2", [id, owner]);
      return rows[0] ? batchOf(rows[0]) : undefined;
    },

    async finish(id) {
      const now = seconds();
      return (await db()).transaction(async (query) => {
        const { rows } = await query("SELECT * FROM sluice_batches WHERE id = $1 FOR UPDATE", [id]);
        if (!rows[0]) return undefined;
        const batch = batchOf(rows[0]);
        if (!UNFINISHED.includes(batch.status)) return batch;
        const output = await writeResults(query, batch, now, "completed");
        const error = await writeResults(query, batch, now, "failed");
        const cancelled = batch.status === "cancelling";
        const done = await query(`UPDATE sluice_batches SET status = $2, output_file_id = $3, error_file_id = $4, finalizing_at = $5, ${cancelled ? "cancelled_at" : "completed_at"} = $5 WHERE id = $1 RETURNING *`, [
          id,
          cancelled ? "cancelled" : "completed",
          output,
          error,
          now,
        ]);
        return batchOf(done.rows[0]!);
      });
    },
    async deadLetter(letters) {
      return writeDeadLetters(await db(), "batch", letters);
    },
  };
  return store;
}

/** Text of about this many characters per stored chunk of a file. */
export const CHUNK_CHARS = 1024 * 1024;
/** Result lines read per query when a batch's files are written. */
const RESULT_PAGE = 1_000;

async function insertLines(query: Database["query"], batchId: string, lines: readonly PendingLine[]): Promise<void> {
  if (lines.length === 0) return;
  await query("INSERT INTO sluice_batch_lines (batch_id, custom_id, line, body) SELECT $1, * FROM unnest($2::text[], $3::int[], $4::text[])", [batchId, lines.map((l) => l.customId), lines.map((l) => l.line), lines.map((l) => l.body)]);
}

async function* oneChunk(content: string): AsyncGenerator<string> {
  yield content;
}

/** A chunked file's text, one chunk per query, in order: never the whole file at once. */
async function* chunksOf(query: Database["query"], fileId: string): AsyncGenerator<string> {
  for (let seq = -1; ; ) {
    const { rows } = await query<{ seq: number; content: string }>("SELECT seq, content FROM sluice_batch_file_chunks WHERE file_id = $1 AND seq > $2 ORDER BY seq LIMIT 1", [fileId, seq]);
    const row = rows[0];
    if (!row) return;
    seq = Number(row.seq);
    yield String(row.content);
  }
}

/**
 * The output (`completed`) or error (`failed`) file of a batch, written
 * from its lines' results a page at a time into chunks of about
 * CHUNK_CHARS: no file is built whole in memory. Resolves with its id, or
 * null when no line has that status.
 */
async function writeResults(query: Database["query"], batch: StoredBatch, now: number, status: "completed" | "failed"): Promise<string | null> {
  const fileId = `file-${randomHex()}`;
  let seq = 0;
  let bytes = 0;
  let text = "";
  let created = false;
  const flush = async () => {
    if (text === "") return;
    if (!created) {
      await query("INSERT INTO sluice_batch_files (id, owner, purpose, filename, bytes, content, created_at, complete) VALUES ($1, $2, 'batch_output', $3, 0, NULL, $4, false)", [
        fileId,
        batch.owner,
        `${batch.id}_${status === "completed" ? "output" : "error"}.jsonl`,
        now,
      ]);
      created = true;
    }
    await query("INSERT INTO sluice_batch_file_chunks (file_id, seq, content) VALUES ($1, $2, $3)", [fileId, seq++, text]);
    bytes += Buffer.byteLength(text);
    text = "";
  };
  for (let after = 0; ; ) {
    const { rows } = await query<{ line: number; status: string; result: string }>("SELECT line, status, result FROM sluice_batch_lines WHERE batch_id = $1 AND line > $2 AND result IS NOT NULL ORDER BY line LIMIT $3", [
      batch.id,
      after,
      RESULT_PAGE,
    ]);
    for (const r of rows) {
      // A line counts as failed unless it completed (the error file holds every other result).
      if ((r.status === "completed") === (status === "completed")) text += `${r.result}\n`;
      if (text.length >= CHUNK_CHARS) await flush();
    }
    if (rows.length < RESULT_PAGE) break;
    after = Number(rows[rows.length - 1]!.line);
  }
  await flush();
  if (!created) return null;
  await query("UPDATE sluice_batch_files SET bytes = $2, complete = true WHERE id = $1", [fileId, bytes]);
  return fileId;
}

/** 24 random hex digits: the tail of file, batch and line ids. */
export function randomHex(): string {
  return randomBytes(12).toString("hex");
}
