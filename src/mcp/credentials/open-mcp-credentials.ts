import type { McpSettings } from "../../config/mcp-schema.js";
import type { SluiceRedisClient } from "../../store/redis-connection.js";
import { createMemoryCredentialStore } from "./credential-store.js";
import { createMcpCredentials, type McpCredentials } from "./mcp-credentials.js";
import { createRedisCredentialStore } from "./redis-credential-store.js";

export interface OpenMcpCredentialsOptions {
  readonly settings: () => McpSettings;
  /** Where `mcp.credentialsKeyEnv` is read (checked at start: set, 32 characters or more). */
  readonly env: NodeJS.ProcessEnv;
  /** The shared store's connection, when there is one: every replica then holds the same tokens. */
  readonly redis?: { readonly client: SluiceRedisClient; readonly prefix: string; readonly timeoutMs: number };
  readonly keyExists: (keyId: string) => Promise<boolean>;
  readonly now: () => number;
}

/**
 * The per-key token holder, when a server needs one (`auth.mode:
 * per-key`; `mcp` reloads only with a restart, so start decides). Kept
 * where runtime keys are (Redis, else this process) rather than in
 * PostgreSQL: tokens are short-lived runtime state that expires on its
 * own, which Redis's TTLs do without a sweeper, and per-key MCP then
 * needs no database.
 */
export function openMcpCredentials(options: OpenMcpCredentialsOptions): McpCredentials | undefined {
  const settings = options.settings();
  if (!Object.values(settings.servers).some((server) => server.auth.mode === "per-key")) return undefined;
  const secret = settings.credentialsKeyEnv === undefined ? undefined : options.env[settings.credentialsKeyEnv];
  const store = options.redis ? createRedisCredentialStore({ ...options.redis, now: options.now }) : createMemoryCredentialStore(options.now);
  return createMcpCredentials({ settings: options.settings, store, ...(secret ? { secret } : {}), keyExists: options.keyExists, now: options.now });
}
