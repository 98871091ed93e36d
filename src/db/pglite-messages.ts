/**
 * What the gateway's thread and the embedded database's worker
 * (pglite-worker.ts) say to each other. Rows and parameters cross by
 * structured clone, which keeps what PGlite returns as it is (Date for
 * timestamps, bigint, Uint8Array for bytea, parsed jsonb, arrays, a
 * vector's text); only errors need care, since a cloned Error keeps its
 * message and loses its SQLSTATE, and the writers tell a refused record
 * from an outage by that code (drain/refusal.ts).
 */
export type WorkerRequest =
  | { readonly id: number; readonly op: "query"; readonly sql: string; readonly params: readonly unknown[] | undefined; readonly tx: number | undefined }
  | { readonly id: number; readonly op: "begin" }
  | { readonly id: number; readonly op: "end"; readonly tx: number; readonly commit: boolean }
  | { readonly id: number; readonly op: "close" };

export type WorkerReply =
  | { readonly type: "opened" }
  | { readonly type: "open_failed"; readonly error: SentError }
  | { readonly type: "done"; readonly id: number; readonly value: unknown }
  | { readonly type: "failed"; readonly id: number; readonly error: SentError };

/** An error as it crosses: its message, name and PostgreSQL's fields (code, detail, hint, ...). */
export interface SentError {
  readonly message: string;
  readonly name: string;
  readonly fields: Readonly<Record<string, string | number>>;
}

export function sendError(error: unknown): SentError {
  if (!(error instanceof Error)) return { message: String(error), name: "Error", fields: {} };
  const fields: Record<string, string | number> = {};
  for (const [key, value] of Object.entries(error)) if (typeof value === "string" || typeof value === "number") fields[key] = value;
  return { message: error.message, name: error.name, fields };
}

/** The error again, on this side: the same message and fields, so `error.code` still names the SQLSTATE. */
export function receivedError(sent: SentError): Error {
  const error = new Error(sent.message);
  error.name = sent.name;
  return Object.assign(error, sent.fields);
}
