import { createHash, hkdfSync } from "node:crypto";
import { seal, unseal } from "../../core/sealed-entry.js";

/** Whose token it is, where it goes: a token set for one binding opens for no other. */
export interface CredentialBinding {
  /** The key's id (Principal.id), never its name: a key created later under a revoked key's name has another id. */
  readonly keyId: string;
  readonly server: string;
  /** The resource the token was issued for (`auth.audience`, else the server's URL). */
  readonly audience: string;
}

/** A token as the gateway holds it, opened. */
export interface HeldCredential {
  readonly token: string;
  /** Epoch milliseconds; from then on it is never used. */
  readonly expiresAt: number;
}

const PURPOSE = "sluice.mcp.credential.v1";

// JSON of the three, so no choice of characters in one can make two bindings read alike.
const bindingText = (binding: CredentialBinding) => JSON.stringify([binding.keyId, binding.server, binding.audience]);

/** The store's name for a binding's entry: a digest, so a dump lists no key id, server or audience in the clear. */
export function bindingDigest(binding: CredentialBinding): string {
  return createHash("sha256").update(PURPOSE).update("\0").update(bindingText(binding)).digest("hex");
}

/**
 * The AES-256-GCM key of one binding's entry, derived (HKDF-SHA256) from
 * the gateway's credentials secret, which lives in the environment and
 * never in the store: a dump of Redis (or of this process's store) reads
 * as nothing, and an entry copied under another binding's name does not
 * open there.
 */
function bindingSecret(master: string, binding: CredentialBinding): Buffer {
  return Buffer.from(hkdfSync("sha256", master, PURPOSE, bindingText(binding), 32));
}

/** The token and its expiry, sealed for `binding`. */
export function sealCredential(credential: HeldCredential, binding: CredentialBinding, master: string): string {
  return seal(JSON.stringify({ token: credential.token, expiresAt: credential.expiresAt, binding: bindingText(binding) }), bindingSecret(master, binding));
}

/** The credential back; undefined when it was sealed for another binding or secret, altered, or is not ours. */
export function openCredential(sealed: string, binding: CredentialBinding, master: string): HeldCredential | undefined {
  const text = unseal(sealed, bindingSecret(master, binding));
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { token, expiresAt, binding: boundTo } = value as Record<string, unknown>;
  if (typeof token !== "string" || typeof expiresAt !== "number" || boundTo !== bindingText(binding)) return undefined;
  return { token, expiresAt };
}
