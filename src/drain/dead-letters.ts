import type { Meter } from "@opentelemetry/api";
import { bounded, type Database } from "../db/database.js";
import type { DeadLetter } from "./isolate.js";

/** The writers whose refused records are kept aside (sluice_dead_letters.source). */
export type DeadLetterSource = "ledger" | "audit" | "batch" | "recording";

/** Tries before a record the database refuses is dead-lettered: a refusal is the record's fault, so a few suffice. */
export const DEAD_LETTER_TRIES = 5;

/** Longest a dead-letter write may take in the database. */
const WRITE_TIMEOUT_MS = 10_000;

/** What the database keeps of an id: no NUL, no lone surrogate (the id came with the record the database refused). */
export function storableId(id: string): string {
  return id.slice(0, 512).replace(/[\u0000-\u001f\u007f]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}

/**
 * Keeps records the database refused in sluice_dead_letters (migration
 * 11), once each: the payload as bytes (bytea), so whatever text or jsonb
 * refused is still kept, for an operator to read, repair and write again
 * (docs/operations.md, "Dead letters").
 */
export async function writeDeadLetters(db: Pick<Database, "transaction">, source: DeadLetterSource, letters: readonly DeadLetter[]): Promise<ReadonlySet<string>> {
  if (letters.length === 0) return new Set();
  const ids = letters.map((l) => storableId(l.id));
  const result = await bounded(db, WRITE_TIMEOUT_MS, (query) =>
    query<{ entry_id: string }>(
      `INSERT INTO sluice_dead_letters (source, entry_id, code, payload)
       SELECT $1, r.id, r.code, decode(r.payload, 'base64') FROM unnest($2::text[], $3::text[], $4::text[]) AS r(id, code, payload)
       ON CONFLICT (source, entry_id) DO NOTHING RETURNING entry_id`,
      [source, ids, letters.map((l) => l.code), letters.map((l) => Buffer.from(l.payload, "utf8").toString("base64"))],
    ),
  );
  // Named as the caller named them (a stored id may have been cleaned).
  const fresh = new Set(result.rows.map((r) => r.entry_id));
  return new Set(letters.filter((_, i) => fresh.has(ids[i]!)).map((l) => l.id));
}

/** Removes dead letters older than `days`, a bounded number per call; resolves with how many went. */
export async function expireDeadLetters(db: Pick<Database, "query">, days: number, limit = 10_000): Promise<number> {
  const result = await db.query<{ entry_id: string }>(
    `DELETE FROM sluice_dead_letters WHERE (source, entry_id) IN (SELECT source, entry_id FROM sluice_dead_letters WHERE at < now() - make_interval(days => $1) LIMIT $2) RETURNING entry_id`,
    [days, limit],
  );
  return result.rows.length;
}

/** `sluice_dead_letters_total{source}`: one counter for every writer, so one alert covers them. */
export function deadLetterCounter(meter: Meter | undefined, source: DeadLetterSource): (count: number) => void {
  const counter = meter?.createCounter("sluice.dead_letters", { unit: "{record}", description: "Records the database refused several times, kept aside in sluice_dead_letters, by writer (ledger, audit, batch, recording)." });
  const attributes = { "sluice.dead_letter.source": source };
  // At 0 from the start: an alert on its rate sees the series before the first dead letter.
  counter?.add(0, attributes);
  return (count) => counter?.add(count, attributes);
}
