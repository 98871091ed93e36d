import type { KeySettings } from "../config/config.js";

/**
 * Who a request is: the virtual key it presented, resolved once at its
 * edge. Carries the key's settings as they are at that moment (a
 * configuration reload or a runtime change applies from the next request)
 * and its SHA-256, never the key.
 */
export interface Principal extends KeySettings {
  readonly source: "config" | "runtime";
  /**
   * Who the key is, for everything kept about it (limits, spend, usage,
   * cache scope, audit): keyId(sha256), never its name, which a key
   * created after this one was revoked may take again. A new secret is a
   * new key, with a new id.
   */
  readonly id: string;
  /** SHA-256 of the key, hex. */
  readonly sha256: string;
  /** The id of the key's team as the request was identified (LevelSettings.id), for what is kept per team (the cache's team scope). */
  readonly teamId?: string;
  /** Runtime keys: when it was created (epoch ms). */
  readonly createdAt?: number;
}

/** Whether the key may use `alias` (no allowlist: every alias). */
export function mayUse(principal: Principal | undefined, alias: string): boolean {
  return principal?.models === undefined || principal.models.includes(alias);
}

/**
 * Who asks for a model listing, and which aliases it shows them: a key's
 * allowlist, or every alias for the admin key and while authentication is
 * off.
 */
export interface ModelViewer {
  /** The key that asked; absent for the admin key and while authentication is off. */
  readonly principal?: Principal;
  sees(alias: string): boolean;
}

/**
 * A key's id: the first 12 hex digits of its hash (48 bits). It names the
 * key in listings without revealing it, and is what the gateway keeps the
 * key's state under (Principal.id); CreateKey never hands out a key whose
 * id another known key has.
 */
export function keyId(sha256: string): string {
  return sha256.slice(0, 12);
}
