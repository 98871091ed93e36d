import type { HealthState } from "../../health/health-state.js";
import type { McpUpstreams } from "../contract.js";

/**
 * Puts the MCP servers' health (`up`, `starting`, `down`, `breaker_open`,
 * tools, restarts, last error) into `/readyz`'s `details.mcp`. It is a
 * detail, never a hold: one MCP server down must not take the replica out
 * of rotation, since model calls and every other MCP server still work
 * (a call to the server that is down fails fast on its own). Returns the
 * function that removes it (at close).
 */
export function reportMcpHealth(health: Pick<HealthState, "detail">, upstreams: Pick<McpUpstreams, "health" | "servers">): () => void {
  if (upstreams.servers.length === 0) return () => {};
  health.detail("mcp", () => ({ servers: upstreams.health() }));
  return () => health.detail("mcp", undefined);
}
