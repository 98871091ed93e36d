import { isRecord } from "./check-input.js";
import type { ConfigProblem } from "./config-problem.js";

/** Where grants are written: each list under `auth`, and the grant's path inside an item. */
const GRANT_HOLDERS = ["businessLines", "teams", "keys"] as const;

/**
 * Grants that name a server `mcp.servers` does not define: such a grant
 * would quietly grant nothing of it (a typo, or a server removed while a
 * grant still counts on it), so the file is refused instead, as a key
 * naming an unknown model alias is.
 */
export function mcpGrantProblems(input: unknown): ConfigProblem[] {
  if (!isRecord(input) || !isRecord(input.auth)) return [];
  const servers = isRecord(input.mcp) && isRecord(input.mcp.servers) ? input.mcp.servers : {};
  const problems: ConfigProblem[] = [];
  for (const holder of GRANT_HOLDERS) {
    const list = input.auth[holder];
    if (!Array.isArray(list)) continue;
    list.forEach((item: unknown, i) => {
      const named = isRecord(item) && isRecord(item.mcp) && Array.isArray(item.mcp.servers) ? item.mcp.servers : [];
      named.forEach((server: unknown, j) => {
        if (typeof server === "string" && server !== "*" && !Object.hasOwn(servers, server)) {
          problems.push({ path: ["auth", holder, i, "mcp", "servers", j], message: `unknown MCP server "${server}" (not in mcp.servers)` });
        }
      });
    });
  }
  return problems;
}
