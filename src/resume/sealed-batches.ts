import { GatewayError } from "../core/errors.js";
import { idDigest, seal, secretFromId, unseal } from "../core/sealed-entry.js";

/**
 * A resumable stream's messages are the answer itself; in Redis they are
 * sealed under a key derived from the stream's id, which only the client
 * that started it (and the replicas serving it) hold, and the keys are
 * named by a digest of the id: a dump of Redis reads no answer and no id.
 */
const secretOf = (id: string) => secretFromId(id, "sluice.resume.v1");

/** The part of a stream's Redis keys that names it. */
export const streamSlot = idDigest;

export function sealBatch(encoded: string, id: string): string {
  return seal(encoded, secretOf(id));
}

/** The batch's JSON; a batch that does not open under `id` (altered in Redis) fails the read. */
export function openBatch(sealed: string, id: string): string {
  const text = unseal(sealed, secretOf(id));
  if (text === undefined) throw new GatewayError("internal", "a stored stream batch does not open: altered in the store");
  return text;
}
