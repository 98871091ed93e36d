import { isRecord } from "./check-input.js";
import type { ConfigProblem } from "./config-problem.js";

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Every MCP server's `headersFromEnv` and `envFromEnv` variable that is
 * unset: the gateway reads them once at start (mcp/upstream/), so a
 * missing one would otherwise surface as a server refusing every call
 * (or a child started without its token) long after start. Messages name
 * the variable, never a value.
 */
export function mcpProblems(input: unknown, env: NodeJS.ProcessEnv): ConfigProblem[] {
  if (!isRecord(input) || !isRecord(input.mcp) || !isRecord(input.mcp.servers)) return [];
  const problems: ConfigProblem[] = [];
  for (const [name, server] of Object.entries(input.mcp.servers)) {
    if (!isRecord(server)) continue;
    for (const [kind, key] of [
      ["http", "headersFromEnv"],
      ["stdio", "envFromEnv"],
    ] as const) {
      const part = server[kind];
      const variables = isRecord(part) ? part[key] : undefined;
      if (!isRecord(variables)) continue;
      for (const [entry, variable] of Object.entries(variables)) {
        if (typeof variable !== "string" || !ENV_NAME.test(variable)) continue;
        const value = env[variable];
        if (value === undefined || value === "") problems.push({ path: ["mcp", "servers", name, kind, key, entry], message: `environment variable ${variable} is not set` });
      }
    }
  }
  return problems;
}
