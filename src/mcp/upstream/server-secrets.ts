import type { McpServerSettings } from "../../config/mcp-schema.js";

type HttpSettings = NonNullable<McpServerSettings["http"]>;
type StdioSettings = NonNullable<McpServerSettings["stdio"]>;

/**
 * A server's headers: `headers`, then `headersFromEnv` read now (start);
 * they are the gateway's own credentials for the server, never a caller's
 * key. An unset variable is a start-up problem (config/mcp-checks.ts), so
 * here it is only left out.
 */
export function serverHeaders(http: HttpSettings, env: NodeJS.ProcessEnv): Record<string, string> {
  const headers: Record<string, string> = { ...http.headers };
  for (const [header, variable] of Object.entries(http.headersFromEnv ?? {})) {
    const value = env[variable];
    if (value !== undefined && value !== "") headers[header] = value;
  }
  return headers;
}

/**
 * A stdio server's whole environment: `PATH` and `HOME` of the gateway's,
 * its `env`, and its `envFromEnv` read now. Nothing else of the gateway's
 * environment (its provider keys, its database URL) reaches the child.
 */
export function serverEnvironment(stdio: StdioSettings, env: NodeJS.ProcessEnv): Record<string, string> {
  const child: Record<string, string> = {};
  for (const name of ["PATH", "HOME"] as const) {
    const value = env[name];
    if (value !== undefined) child[name] = value;
  }
  Object.assign(child, stdio.env);
  for (const [name, variable] of Object.entries(stdio.envFromEnv ?? {})) {
    const value = env[variable];
    if (value !== undefined && value !== "") child[name] = value;
  }
  return child;
}
