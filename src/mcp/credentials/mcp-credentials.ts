import type { McpSettings } from "../../config/mcp-schema.js";
import { GatewayError } from "../../core/errors.js";
import { MCP_ERRORS, McpError } from "../contract.js";
import { bindingDigest, type CredentialBinding, openCredential, sealCredential } from "./credential-seal.js";
import type { CredentialStore } from "./credential-store.js";

/** A key's id as Principal.id has it: 12 hex digits of its hash. */
const KEY_ID = /^[0-9a-f]{12}$/;
/** An access token goes into an `Authorization: Bearer` header: visible ASCII only, bounded. */
const TOKEN = /^[\x21-\x7e]{1,8192}$/;

export interface SetCredential {
  readonly keyId: string;
  readonly server: string;
  readonly accessToken: string;
  /** Epoch milliseconds; must be in the future. */
  readonly expiresAt: number;
}

/** What setting one answers: where it is bound, never the token. */
export interface SetCredentialResult {
  readonly keyId: string;
  readonly server: string;
  readonly audience: string;
  readonly expiresAt: number;
}

/**
 * Per-key OAuth 2.1 access tokens for MCP servers with `auth.mode:
 * per-key` (docs/mcp.md, "Upstream identity"): the admin API sets and
 * removes them, the toolbox asks `credentialFor` on every call to such a
 * server and hands the answer to the upstream as its bearer. Tokens are
 * bound to the key's id, the server and its audience; none is ever
 * returned by the admin API, logged, or taken from the caller's request.
 */
export interface McpCredentials {
  set(credential: SetCredential): Promise<SetCredentialResult>;
  /** Whether there was one for this key at this server (its current audience). */
  delete(keyId: string, server: string): Promise<boolean>;
  /**
   * The bearer token a call by `keyId` carries to `server`: undefined for
   * a static server (the upstream sends the gateway's own headers); the
   * key's own unexpired token for a per-key one, else a McpError telling
   * the operator to set one. `keyId` undefined (authentication off) has
   * none.
   */
  credentialFor(keyId: string | undefined, server: string): Promise<string | undefined>;
}

export interface McpCredentialsOptions {
  /** The settings in force (a reload may change a server's mode or audience). */
  readonly settings: () => McpSettings;
  readonly store: CredentialStore;
  /** The value of `mcp.credentialsKeyEnv`; absent: no server may be per-key (the configuration check guarantees it). */
  readonly secret?: string;
  /** Whether a key with this id is known now (configured or runtime): a token is never set for nobody. */
  readonly keyExists: (keyId: string) => Promise<boolean>;
  readonly now: () => number;
}

export function createMcpCredentials(options: McpCredentialsOptions): McpCredentials {
  const { store, now } = options;
  /** The per-key server named, with its binding's audience; undefined for a static one. */
  const perKey = (server: string): { readonly audience: string } | undefined => {
    const settings = options.settings().servers[server];
    if (settings === undefined || settings.auth.mode !== "per-key") return undefined;
    return { audience: settings.auth.audience ?? settings.http?.url ?? "" };
  };
  const adminBinding = (keyId: string, server: string): CredentialBinding & { readonly master: string } => {
    if (!KEY_ID.test(keyId)) throw new GatewayError("invalid_request", "key_id: a key's id is 12 lowercase hex digits (ListKeys shows it)", { field: "key_id" });
    const configured = options.settings().servers[server];
    if (configured === undefined) throw new GatewayError("not_found", `server: no MCP server ${JSON.stringify(server)} is configured`, { field: "server" });
    const target = perKey(server);
    if (target === undefined || options.secret === undefined) throw new GatewayError("failed_precondition", `server ${server} has auth.mode static: its calls carry the gateway's own secret, not a key's token`, { field: "server" });
    return { keyId, server, audience: target.audience, master: options.secret };
  };
  const stored = <T>(work: Promise<T>): Promise<T> =>
    work.catch((error: unknown) => {
      if (error instanceof GatewayError) throw error;
      throw new GatewayError("store_unavailable", "the MCP credential store did not answer");
    });
  return {
    async set(credential) {
      const binding = adminBinding(credential.keyId, credential.server);
      // The token is checked by shape only; no message ever repeats it.
      if (!TOKEN.test(credential.accessToken)) throw new GatewayError("invalid_request", "access_token: 1 to 8192 visible ASCII characters (it is sent as a bearer token)", { field: "access_token" });
      if (!Number.isFinite(credential.expiresAt) || credential.expiresAt <= now()) throw new GatewayError("invalid_request", "expires_at: must be in the future (an expired token is never used)", { field: "expires_at" });
      if (!(await options.keyExists(credential.keyId))) throw new GatewayError("not_found", `key_id: no key has id ${credential.keyId}`, { field: "key_id" });
      await stored(store.put(bindingDigest(binding), sealCredential({ token: credential.accessToken, expiresAt: credential.expiresAt }, binding, binding.master), credential.expiresAt));
      return { keyId: binding.keyId, server: binding.server, audience: binding.audience, expiresAt: credential.expiresAt };
    },
    async delete(keyId, server) {
      return stored(store.delete(bindingDigest(adminBinding(keyId, server))));
    },
    async credentialFor(keyId, server) {
      const target = perKey(server);
      if (target === undefined) return undefined;
      const missing = () =>
        new McpError(
          MCP_ERRORS.refused,
          `server ${server} calls carry each key's own access token (auth.mode per-key), and ${keyId === undefined ? "this request has no key" : `key ${keyId} has none set, or it expired`}: an operator sets one with AdminService.SetMcpCredential`,
          { status: 403, server },
        );
      if (keyId === undefined || options.secret === undefined) throw missing();
      const binding = { keyId, server, audience: target.audience };
      let sealed: string | undefined;
      try {
        sealed = await store.get(bindingDigest(binding));
      } catch {
        throw new McpError(MCP_ERRORS.upstreamFailed, `server ${server}: the store holding per-key access tokens did not answer`, { server });
      }
      const held = sealed === undefined ? undefined : openCredential(sealed, binding, options.secret);
      if (held === undefined || held.expiresAt <= now()) throw missing();
      return held.token;
    },
  };
}
