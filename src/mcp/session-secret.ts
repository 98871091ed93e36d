import { createHash, randomBytes } from "node:crypto";
import type { Logger } from "../logging/logger.js";

/** The environment variable that holds the secret MCP session ids are sealed with; the same value on every replica. */
export const SESSION_SECRET_ENV = "SLUICE_MCP_SESSION_SECRET";

/**
 * The 32-byte secret `Mcp-Session-Id`s are sealed with. Every replica must
 * hold the same one, or a session opened on one is a 404 on the next:
 * 1. `SLUICE_MCP_SESSION_SECRET` (any string of 32+ characters; hashed to
 *    32 bytes), set by the operator beside the other secrets — the choice
 *    for production, since rotating it is then an operator's act;
 * 2. else a random one for this process, with a warning: sessions then
 *    survive neither a restart nor a second replica (clients re-initialize
 *    on the 404, as the spec has them do).
 * It is never kept in the shared store: a secret Redis holds in plaintext
 * is one a dump of Redis gives away (an earlier version agreed on one there
 * with SET NX), and it would open every session. A gateway with a shared
 * store and no configured secret is warned about at start. The secret is
 * never logged.
 */
export function mcpSessionSecret(options: { readonly env: NodeJS.ProcessEnv; readonly log: Logger; readonly replicated?: boolean }): Buffer {
  const configured = options.env[SESSION_SECRET_ENV];
  if (configured !== undefined && configured !== "") {
    if (configured.length < 32) throw new Error(`${SESSION_SECRET_ENV} must be at least 32 characters`);
    return createHash("sha256").update(configured).digest();
  }
  options.log.warn(
    { event: "mcp_session_secret_random", replicated: options.replicated === true },
    `${SESSION_SECRET_ENV} is not set: MCP sessions are sealed with a per-process secret and survive neither a restart nor a move to another replica (clients re-initialize on the 404)`,
  );
  return randomBytes(32);
}
