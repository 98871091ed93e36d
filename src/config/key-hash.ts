import { createHash } from "node:crypto";

/**
 * SHA-256 of a key, in hex: what the gateway keeps, stores and compares
 * instead of the key. Virtual keys are long random strings, so a fast hash
 * is enough (nothing to slow down a dictionary attack against); what
 * matters is that the plaintext is never kept.
 */
export function sha256Hex(value: string): string {
  return createHash("sha256").update(value, "utf8").digest("hex");
}
