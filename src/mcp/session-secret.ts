import { createHash, randomBytes } from "node:crypto";
import type { Logger } from "../logging/logger.js";

/** The environment variable that holds the secret MCP session ids are sealed with; the same value on every replica. */
export const SESSION_SECRET_ENV = "SLUICE_MCP_SESSION_SECRET";

/** Where replicas agree on one secret without an operator: set once if absent, then read (Redis SET NX, or a PostgreSQL row). */
export interface SharedSecretStore {
  /** The value under `name`, storing `candidate` first if there is none; what every replica then reads. */
  getOrSet(name: string, candidate: string): Promise<string>;
}

/**
 * The 32-byte secret `Mcp-Session-Id`s are sealed with. Every replica must
 * hold the same one, or a session opened on one is a 404 on the next:
 * 1. `SLUICE_MCP_SESSION_SECRET` (any string of 32+ characters; hashed to
 *    32 bytes), set by the operator beside the other secrets — the choice
 *    for production, since rotating it is then an operator's act;
 * 2. else one created once in the shared store, when there is one (the
 *    first replica's candidate wins, the others read it);
 * 3. else a random one for this process, with a warning: sessions then
 *    survive neither a restart nor a second replica (clients re-initialize
 *    on the 404, as the spec has them do).
 * The secret is never logged.
 */
export async function mcpSessionSecret(options: { readonly env: NodeJS.ProcessEnv; readonly log: Logger; readonly shared?: SharedSecretStore }): Promise<Buffer> {
  const configured = options.env[SESSION_SECRET_ENV];
  if (configured !== undefined && configured !== "") {
    if (configured.length < 32) throw new Error(`${SESSION_SECRET_ENV} must be at least 32 characters`);
    return createHash("sha256").update(configured).digest();
  }
  if (options.shared) {
    const value = await options.shared.getOrSet("sluice:mcp:session-secret", randomBytes(32).toString("base64"));
    return createHash("sha256").update(value).digest();
  }
  options.log.warn({ event: "mcp_session_secret_random" }, `${SESSION_SECRET_ENV} is not set and there is no shared store: MCP sessions are sealed with a per-process secret and will not survive a restart or move between replicas`);
  return randomBytes(32);
}
