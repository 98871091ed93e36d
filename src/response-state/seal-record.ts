import { seal, secretFromId, unseal } from "../core/sealed-entry.js";

export { idDigest } from "../core/sealed-entry.js";

/**
 * A stored record's secret: derived from its id (which only its owner's
 * clients hold) and its owner's key id, as a cache entry's is derived from
 * its request. What the database holds is a digest of the id and a sealed
 * body: a dump of it, or of its backups, reads no prompt and no answer.
 */
const secretOf = (id: string, owner: string) => secretFromId(id, "sluice.responses.v1", owner);

export function sealRecord(value: unknown, id: string, owner: string): string {
  return seal(JSON.stringify(value), secretOf(id, owner));
}

/** The value back; undefined when `id` or `owner` is not the one it was sealed for, or it was altered. */
export function unsealRecord<T>(sealed: string, id: string, owner: string): T | undefined {
  const text = unseal(sealed, secretOf(id, owner));
  return text === undefined ? undefined : (JSON.parse(text) as T);
}
