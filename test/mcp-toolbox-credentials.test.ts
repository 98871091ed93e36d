import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { NO_POLICY } from "../src/compliance/pii-policy.js";
import { mcpSchema } from "../src/config/mcp-schema.js";
import { type ExposedTool, MCP_ERRORS, type McpCaller, McpError, type McpUpstreams, type UpstreamCallOptions } from "../src/mcp/contract.js";
import { createMemoryCredentialStore } from "../src/mcp/credentials/credential-store.js";
import { createMcpCredentials } from "../src/mcp/credentials/mcp-credentials.js";
import { createMcpToolbox } from "../src/mcp/toolbox.js";
import type { Principal } from "../src/tenancy/principal.js";

const ALICE = "a11ce0000001";
const BOB = "b0b000000002";
const NOW = Date.parse("2026-12-07T00:00:00Z");

const settings = mcpSchema.parse({
  credentialsKeyEnv: "MCP_CREDENTIALS_KEY",
  servers: {
    tickets: { http: { url: "http://127.0.0.1:9/mcp" }, auth: { mode: "per-key" } },
    search: { http: { url: "http://127.0.0.1:9/search/mcp" } },
  },
});

/** A caller presenting the virtual key `key` (whose id is `id`): the key itself is what must never travel upstream. */
const caller = (id: string, key: string): McpCaller => ({ principal: { id, sha256: `${id}${"0".repeat(52)}`, name: id, source: "config", limits: {}, key } as unknown as Principal });

/** The upstream side as the toolbox sees it, answering each call with the bearer it was handed (the test MCP server's whoami does the same over HTTP). */
function recordingUpstreams(): McpUpstreams & { readonly calls: UpstreamCallOptions[] } {
  const calls: UpstreamCallOptions[] = [];
  const tool = (server: string): ExposedTool => ({ name: `${server}_whoami`, server, upstreamName: "whoami", definition: { name: `${server}_whoami`, inputSchema: { type: "object" } } });
  return {
    calls,
    servers: ["tickets", "search"],
    tools: async (server) => [tool(server)],
    prompts: async () => [],
    resources: async () => [],
    async callTool(_server, _tool, _args, options): Promise<CallToolResult> {
      calls.push(options);
      return { content: [{ type: "text", text: options.bearer ?? "(none)" }] };
    },
    getPrompt: async () => ({ messages: [] }),
    readResource: async () => ({ contents: [] }),
    openSessions: async () => ({}),
    health: () => ({}),
    onListChanged: () => () => undefined,
    close: async () => undefined,
  };
}

describe("the toolbox with per-key credentials", () => {
  it("hands each caller's call its own key's token, never another's nor the caller's key, and refuses one without a token before it is charged", async () => {
    const credentials = createMcpCredentials({
      settings: () => settings,
      store: createMemoryCredentialStore(() => NOW),
      secret: "toolbox-credentials-secret-0123456789",
      keyExists: async (id) => id === ALICE || id === BOB,
      now: () => NOW,
    });
    await credentials.set({ keyId: ALICE, server: "tickets", accessToken: "token-of-alice", expiresAt: NOW + 60_000 });
    await credentials.set({ keyId: BOB, server: "tickets", accessToken: "token-of-bob", expiresAt: NOW + 60_000 });
    const upstreams = recordingUpstreams();
    const admitted: string[] = [];
    const toolbox = createMcpToolbox({
      settings,
      upstreams,
      grants: () => ({ server: () => true, tool: () => true }),
      accounting: {
        admit: async (c) => {
          admitted.push(c.principal?.id ?? "");
          return { settle: () => undefined };
        },
      },
      piiPolicy: () => NO_POLICY,
      argumentsSha256: () => "0".repeat(64),
      credentialFor: credentials.credentialFor,
      now: () => NOW,
    });
    const options = { signal: new AbortController().signal, via: "mcp" as const };
    const text = (result: CallToolResult) => (result.content[0] as { text: string }).text;

    // Interleaved, so no state of one call leaks into the next.
    expect(text(await toolbox.callTool(caller(ALICE, "sk-alice-own-key"), "tickets_whoami", {}, options))).toBe("token-of-alice");
    expect(text(await toolbox.callTool(caller(BOB, "sk-bob-own-key"), "tickets_whoami", {}, options))).toBe("token-of-bob");
    expect(text(await toolbox.callTool(caller(ALICE, "sk-alice-own-key"), "tickets_whoami", {}, options))).toBe("token-of-alice");
    // A static server: no bearer from the toolbox (the upstream sends the gateway's own headers), and never the caller's key.
    expect(text(await toolbox.callTool(caller(ALICE, "sk-alice-own-key"), "search_whoami", {}, options))).toBe("(none)");
    expect(JSON.stringify(upstreams.calls.map((c) => c.bearer))).not.toMatch(/sk-(alice|bob)-own-key/);

    // A key with no token there: refused, telling the operator what to do, before admission (nothing charged).
    const before = admitted.length;
    const refused = await toolbox.callTool(caller("c0ffee000003", "sk-carol-own-key"), "tickets_whoami", {}, options).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(McpError);
    expect((refused as McpError).code).toBe(MCP_ERRORS.refused);
    expect((refused as McpError).message).toContain("SetMcpCredential");
    expect(admitted.length).toBe(before);
    expect(upstreams.calls.length).toBe(4);
  });
});
