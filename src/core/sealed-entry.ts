import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from "node:crypto";

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * An entry's value encrypted (AES-256-GCM) under a key derived from the
 * request itself (cache-key.ts): what a cache holds in Redis or memory is
 * an answer nobody can read without sending the same request, so a
 * model's answer (personal data, a secret it repeated) is never stored in
 * plaintext. Base64 of IV, tag and ciphertext.
 */
export function seal(text: string, secret: Buffer): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", secret, iv);
  const body = Buffer.concat([cipher.update(text, "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
}

/** The length of `seal(text)` for a text of `textBytes` UTF-8 bytes (base64: ASCII, one byte a character): what a store holds. */
export function sealedBytes(textBytes: number): number {
  return 4 * Math.ceil((IV_BYTES + TAG_BYTES + textBytes) / 3);
}

/** The value back; undefined when it was not sealed with this secret or was altered. */
export function unseal(sealed: string, secret: Buffer): string | undefined {
  const bytes = Buffer.from(sealed, "base64");
  if (bytes.length < IV_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv("aes-256-gcm", secret, bytes.subarray(0, IV_BYTES));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
  } catch {
    return undefined;
  }
}

/**
 * A key derived from an id only its holder has (a response, conversation,
 * stream or tool-call id) for one `purpose`, bound to `context` (an owner's
 * key id): what the gateway keeps under that id opens for whoever holds
 * the id, and for nobody reading the store.
 */
export function secretFromId(id: string, purpose: string, context = ""): Buffer {
  return Buffer.from(hkdfSync("sha256", id, purpose, context, 32));
}

/** How a store names what it keeps under an id: its SHA-256, hex, so the id (and the secret derived from it) is never stored. */
export function idDigest(id: string): string {
  return createHash("sha256").update(id).digest("hex");
}
