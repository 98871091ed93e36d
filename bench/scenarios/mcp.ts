import { randomBytes } from "node:crypto";
import { type McpResult, mcpEntries, mcpScenario } from "../mcp.js";
import type { McpLoadResult } from "../mcp-client.js";
import { runJson, startUntil } from "../procs.js";
import { log, ROOT, type Services, startGateway } from "../services.js";

/** The MCP gateway (issue #48): bench/mcp.ts, with a server process and load-generator processes of its own. */
export function mcpRun(s: Services): Promise<McpResult> {
  const entries = mcpEntries(ROOT);
  return mcpScenario({
    sizes: s.size.mcp,
    startServer: async () => {
      const { proc, value } = await startUntil(process.execPath, [entries.server], (line) => (line.startsWith('{"url"') ? (JSON.parse(line) as { url: string }).url : undefined));
      return { proc, url: value };
    },
    // The session secret set as docs/mcp.md advises for production (every replica the same one).
    startGateway: (config) => startGateway(s, config, { env: { SLUICE_MCP_SESSION_SECRET: randomBytes(32).toString("hex") } }),
    runLoad: (spec) => runJson<McpLoadResult>([entries.client, JSON.stringify(spec)], 600_000),
    redisPort: s.redisPort,
    log,
  });
}
