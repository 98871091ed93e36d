import { hkdfSync } from "node:crypto";
import { seal, unseal } from "../core/sealed-entry.js";

const PURPOSE = "sluice.provider.key.v1";

/**
 * The AES-256-GCM key of one provider's stored API keys, derived (HKDF-SHA256)
 * from the same secret per-key MCP tokens are sealed under
 * (`mcp.credentialsKeyEnv`, mcp/credentials/credential-seal.ts) with a purpose
 * of its own: one secret for the operator to hold and rotate, and a sealed
 * MCP token never opens as a provider key, nor one provider's key as
 * another's.
 */
function providerSecret(master: string, provider: string): Buffer {
  return Buffer.from(hkdfSync("sha256", master, PURPOSE, provider, 32));
}

/** The key sealed for `provider`: what the database row holds. */
export function sealProviderKey(key: string, provider: string, master: string): string {
  return seal(JSON.stringify({ provider, key }), providerSecret(master, provider));
}

/** The key back; undefined when sealed for another provider or secret, or altered. */
export function openProviderKey(sealed: string, provider: string, master: string): string | undefined {
  const text = unseal(sealed, providerSecret(master, provider));
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as { provider?: unknown; key?: unknown };
    return value.provider === provider && typeof value.key === "string" ? value.key : undefined;
  } catch {
    return undefined;
  }
}

/** Shorter keys get no fingerprint: four characters of a short key would be a real part of it. */
const MIN_FINGERPRINTED = 20;

/**
 * What list shows of a key: its last four characters, as OpenAI's,
 * Anthropic's and Google's consoles show theirs, so an operator can match a
 * stored key with the one the provider lists. Chosen over a hash prefix: an
 * unkeyed hash of a key confirms a guessed or leaked key offline and
 * matches nothing the provider shows; four characters of a 40+ character
 * random key tell an attacker next to nothing.
 */
export function keyFingerprint(key: string): string {
  return key.length < MIN_FINGERPRINTED ? "" : `…${key.slice(-4)}`;
}
