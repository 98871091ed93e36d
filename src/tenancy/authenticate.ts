import { timingSafeEqual } from "node:crypto";
import type { Config, ConfiguredKey } from "../config/config.js";
import { sha256Hex } from "../config/key-hash.js";
import { GatewayError } from "../core/errors.js";
import type { KeyRegistry } from "./key-registry.js";
import { keyId, type Principal } from "./principal.js";

/** `Bearer <token>`: the OpenAI SDKs' apiKey, gRPC metadata, curl -H. A token is printable ASCII, at most 512 characters. */
const BEARER = /^\s*Bearer\s+([\x21-\x7e]{1,512})\s*$/i;

/** Why a request has no principal; for the observer, never shown beyond "missing" / "invalid". */
export type AuthFailure = "missing" | "malformed" | "unknown";

export class AuthError extends GatewayError {
  constructor(readonly failure: AuthFailure) {
    super("unauthenticated", failure === "missing" ? "missing API key: send it as `authorization: Bearer <key>`" : "invalid API key");
  }
}

/**
 * One instance per failure, thrown at every refused key. Building an Error
 * (its stack) per refusal cost 17.5 µs against 0.4 µs for a shared one
 * (same-run A/B, in process, under load): a third of the key flood's
 * budget per rejection (issue #47), for a stack nobody reads. Its fields
 * are readonly, so sharing it shares nothing a request could change.
 */
const AUTH_ERRORS: Readonly<Record<AuthFailure, AuthError>> = { missing: new AuthError("missing"), malformed: new AuthError("malformed"), unknown: new AuthError("unknown") };

/** The refusal for `failure`. */
export function authError(failure: AuthFailure): AuthError {
  return AUTH_ERRORS[failure];
}

const indexes = new WeakMap<readonly ConfiguredKey[], ReadonlyMap<string, Principal>>();

/** Configured keys by hash, built once per configuration (a reload brings a new array, hence a new index). */
function configuredKeys(keys: readonly ConfiguredKey[]): ReadonlyMap<string, Principal> {
  let index = indexes.get(keys);
  if (!index) {
    index = new Map(keys.map((k) => [k.sha256, { ...k, source: "config" as const, id: keyId(k.sha256) }]));
    indexes.set(keys, index);
  }
  return index;
}

/** The key with this SHA-256 as configured now (configured keys, then the runtime keys this replica knows); undefined when there is none. */
export function keyByHash(sha256: string, config: Config, registry: KeyRegistry): Principal | undefined {
  return configuredKeys(config.auth.keys).get(sha256) ?? registry.get(sha256);
}

/** The bearer token of an `authorization` header; throws `unauthenticated` without one. */
export function bearerToken(header: string | undefined): string {
  if (header === undefined || header.trim() === "") throw authError("missing");
  const match = BEARER.exec(header);
  if (!match) throw authError("malformed");
  return match[1]!;
}

/** Equal hex digests, compared in constant time. */
export function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/**
 * The principal behind an `authorization` header: the key is hashed and
 * looked up among the configured keys (of the configuration in force now)
 * and the runtime keys this replica knows, re-reading those once if the
 * key is new to it. A key it cannot find while the runtime keys cannot be
 * read is `store_unavailable` (UNAVAILABLE / 503), never `unauthenticated`:
 * a slow store must not turn a valid key into an invalid one. The lookup is by hash, so its timing depends on the
 * hash of what the caller sent, which tells the caller nothing about any
 * stored key; the final comparison is in constant time all the same.
 */
export async function authenticate(header: string | undefined, config: Config, registry: KeyRegistry): Promise<Principal> {
  const hash = sha256Hex(bearerToken(header));
  let found = configuredKeys(config.auth.keys).get(hash) ?? registry.get(hash);
  if (!found) {
    await registry.refreshOnMiss();
    found = registry.get(hash);
    // The runtime keys could not be read (a slow or absent store): this may be a valid key the copy does not know yet.
    if (!found && registry.unreadable()) throw new GatewayError("store_unavailable", "the gateway's shared store is unreachable, so this key cannot be checked now; retry shortly", { retryAfterMs: 1_000 });
  }
  if (!found || !sameDigest(found.sha256, hash)) throw authError("unknown");
  return found;
}
