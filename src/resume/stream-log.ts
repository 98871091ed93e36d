import type { Delta } from "../core/delta.js";
import { type ErrorCode, GatewayError } from "../core/errors.js";

/**
 * One stored message of a resumable stream. A stream's log holds its deltas
 * in sequence order and, when it did not end with `finish`, one last
 * record saying how it ended, so a reader on any replica ends exactly as
 * the original did.
 */
export type LogRecord =
  | { readonly kind: "delta"; readonly delta: Delta }
  /** The stream ended with this error; `message` is the client-safe GatewayError message. */
  | { readonly kind: "failed"; readonly code: ErrorCode; readonly message: string }
  /** The stored backlog hit its bound: nothing after this is stored, the stream cannot be resumed. */
  | { readonly kind: "truncated" };

export interface LogEntry {
  readonly sequence: number;
  readonly record: LogRecord;
}

/** Written with the stream's `start`: who may read it and what its edge needs to re-encode it. */
export interface StreamMeta {
  /** SHA-256 of the key that started it; "" when authentication was off. */
  readonly owner: string;
  /** The OpenAI facade's `stream_options.include_usage`, for a facade resume. */
  readonly includeUsage?: boolean;
  /** The model alias the client named: a resumed stream's chunks name it, as the original's did. */
  readonly alias?: string;
}

/** What replicas tell the stream's owner: a reader attached or left, or CancelStream. */
export type ControlOp = "attach" | "detach" | "cancel";

/**
 * Where resumable streams are kept: Redis Streams shared by every replica
 * (redis-stream-log.ts), or in process (memory-stream-log.ts). Every record
 * of a stream expires `retentionMs` after its last write.
 */
export interface StreamLog {
  /** Records the stream's owner; before its first append. */
  open(id: string, meta: StreamMeta): Promise<void>;
  /**
   * Appends a batch of consecutive entries; `encoded` is encodeBatch of
   * them (the writer has it already, having measured each). Batches are
   * applied in call order; the writer never leaves a gap.
   */
  append(id: string, entries: readonly LogEntry[], encoded: string): Promise<void>;
  /** Undefined: unknown id, or its retention passed. */
  meta(id: string): Promise<StreamMeta | undefined>;
  /**
   * Every entry from sequence 0, then the live ones as they are appended,
   * until a terminal record (`finish`, failed, truncated). Throws
   * `not_found` when the stream expires while it waits.
   */
  read(id: string, signal: AbortSignal): AsyncGenerator<LogEntry, void, undefined>;
  /** Tells every replica (this one included) about `id`. */
  publish(id: string, op: ControlOp): Promise<void>;
  /** Hears every publish; returns the unsubscribe. */
  subscribe(listener: (id: string, op: ControlOp) => void): () => void;
  close(): Promise<void>;
}

/** Whether nothing follows this record in a stream. */
export function isTerminal(record: LogRecord): boolean {
  return record.kind !== "delta" || record.delta.type === "finish";
}

/** One entry as stored: compact JSON. */
export function encodeEntry(entry: LogEntry): string {
  return JSON.stringify(entry);
}

/** Entries encoded one by one, as one stored batch. */
export function encodeBatch(encoded: readonly string[]): string {
  return `[${encoded.join(",")}]`;
}

export function decodeBatch(text: string): LogEntry[] {
  return JSON.parse(text) as LogEntry[];
}

/** A stream nobody has, or whose retention has passed: what every reader and ResumeStream say. */
export function notFound(id: string): GatewayError {
  return new GatewayError("not_found", `stream ${id} not found: unknown, or its retention has passed`, { field: "response_id" });
}
