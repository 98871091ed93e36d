import { describe, expect, it } from "vitest";
import { resolveConfig } from "../src/config/config.js";
import { checkConfig, formatPath } from "../src/config/problems.js";
import { configErrors } from "./helpers/config-errors.js";

const KEY = "sk-test-config-mcp-0123456789abcdef";
const base = {
  providers: { main: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
  models: { m: { provider: "main", model: "gpt" } },
  mcp: { servers: { gh: { http: { url: "http://127.0.0.1:9/mcp" } }, "fs-1": { stdio: { command: "true" } } } },
};

describe("MCP grants in the configuration", () => {
  it("refuses a grant naming a server mcp.servers does not define, at the grant's path, with every other problem", () => {
    const input = {
      ...base,
      auth: {
        keys: [{ name: "a", keyEnv: "A_KEY", team: "t", mcp: { servers: ["gh", "gtihub"] } }],
        teams: [{ name: "t", businessLine: "b", mcp: { servers: ["*", "fs-2"] } }],
        businessLines: [{ name: "b", mcp: { servers: ["nope"] } }],
      },
    };
    const { problems } = checkConfig(input, { A_KEY: KEY });
    expect(problems.map((p) => `${formatPath(p.path)}: ${p.message}`)).toEqual([
      'auth.businessLines.0.mcp.servers.0: unknown MCP server "nope" (not in mcp.servers)',
      'auth.teams.0.mcp.servers.1: unknown MCP server "fs-2" (not in mcp.servers)',
      'auth.keys.0.mcp.servers.1: unknown MCP server "gtihub" (not in mcp.servers)',
    ]);
    // Start-up refuses it the same way (check-config and start share checkConfig).
    expect(configErrors({ ...input, mcp: undefined }, { A_KEY: KEY })).toContain('auth.keys.0.mcp.servers.0: unknown MCP server "gh" (not in mcp.servers)');
  });

  it("accepts known servers and * and carries each level's grant onto its settings", () => {
    const grant = { servers: ["gh"], tools: { allow: ["gh_*"], deny: ["gh_delete*"] } };
    const config = resolveConfig(
      {
        ...base,
        auth: {
          keys: [{ name: "a", keyEnv: "A_KEY", team: "t", mcp: grant }],
          teams: [{ name: "t", businessLine: "b", mcp: { servers: ["*"] } }],
          businessLines: [{ name: "b", mcp: { servers: ["gh", "fs-1"] } }],
        },
      },
      { A_KEY: KEY },
    );
    expect(config.auth.keys[0]?.mcp).toEqual(grant);
    expect(config.auth.teams.get("t")?.mcp).toEqual({ servers: ["*"] });
    expect(config.auth.businessLines.get("b")?.mcp).toEqual({ servers: ["gh", "fs-1"] });
  });
});
