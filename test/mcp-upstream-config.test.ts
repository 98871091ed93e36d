import { describe, expect, it } from "vitest";
import { resolveConfig } from "../src/config/config.js";
import { checkConfig } from "../src/config/problems.js";
import { configErrors } from "./helpers/config-errors.js";

const base = {
  providers: { main: { kind: "openai", baseUrl: "http://127.0.0.1:9/v1" } },
  models: { m: { provider: "main", model: "gpt" } },
};

const withServers = {
  ...base,
  mcp: {
    servers: {
      github: { http: { url: "http://127.0.0.1:9/mcp", headersFromEnv: { Authorization: "MCP_GITHUB_TOKEN", "X-Org": "MCP_ORG" } } },
      files: { stdio: { command: "node", envFromEnv: { TOKEN: "MCP_FILES_TOKEN" } } },
    },
  },
};

describe("MCP server variables at start-up", () => {
  it("reports every unset headersFromEnv and envFromEnv variable, naming it but never a value", () => {
    const report = configErrors(withServers, { MCP_ORG: "org-value-secret", MCP_FILES_TOKEN: "" });
    expect(report).toContain("mcp.servers.github.http.headersFromEnv.Authorization: environment variable MCP_GITHUB_TOKEN is not set");
    expect(report).toContain("mcp.servers.files.stdio.envFromEnv.TOKEN: environment variable MCP_FILES_TOKEN is not set");
    expect(report).not.toContain("MCP_ORG");
    expect(report).not.toContain("org-value-secret");
  });

  it("starts when they are all set", () => {
    const env = { MCP_GITHUB_TOKEN: "Bearer t", MCP_ORG: "o", MCP_FILES_TOKEN: "f" };
    expect(checkConfig(withServers, env).problems).toEqual([]);
    expect(() => resolveConfig(withServers, env)).not.toThrow();
  });
});
