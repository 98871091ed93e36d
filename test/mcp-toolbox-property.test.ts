import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { NO_POLICY } from "../src/compliance/pii-policy.js";
import type { LevelSettings, TeamSettings } from "../src/config/config.js";
import { type McpGrant, mcpSchema } from "../src/config/mcp-schema.js";
import { type ExposedTool, MCP_ERRORS, type McpCaller, McpError, type McpUpstreams } from "../src/mcp/contract.js";
import { toolGrants } from "../src/mcp/grants.js";
import { createMcpToolbox } from "../src/mcp/toolbox.js";
import { createRandom } from "../src/simulator/random.js";
import type { Principal } from "../src/tenancy/principal.js";

/**
 * The property, through the toolbox rather than the predicate
 * alone: for random grants on a business line, a team, a key and a
 * request's narrowing, every tool `tools/list` shows is callable, and
 * every other tool of every server (and names no server has) is refused
 * with the one "not found" error before anything is admitted or forwarded.
 */
const SERVERS = ["files", "web", "db"] as const;
const TOOL_NAMES = ["read", "write", "read_all", "fetch", "query", "drop.table"] as const;

function universe(): Record<string, ExposedTool[]> {
  const listings: Record<string, ExposedTool[]> = {};
  for (const server of SERVERS) {
    listings[server] = TOOL_NAMES.filter((_, i) => (i + server.length) % 4 !== 0).map((name) => ({
      name: `${server}_${name}`,
      server,
      upstreamName: name,
      definition: { name: `${server}_${name}`, inputSchema: { type: "object" } },
    }));
  }
  return listings;
}

function randomGrant(random: () => number): McpGrant | undefined {
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  const some = <T>(list: readonly T[], most: number) => Array.from({ length: Math.floor(random() * (most + 1)) }, () => pick(list));
  if (random() < 0.25) return undefined;
  const globs = ["*", "files_*", "web_*", "db_*", "*_read*", "*write", "*.table", "db_query", "web_fetch", "files_read_all", "*_*_*", "nothing*"];
  const grant: { servers?: string[]; tools?: { allow?: string[]; deny?: string[] } } = {};
  if (random() < 0.7) grant.servers = some([...SERVERS, "*"], 3);
  if (random() < 0.7) {
    grant.tools = {};
    if (random() < 0.6) grant.tools.allow = some(globs, 3);
    if (random() < 0.6) grant.tools.deny = some(globs, 2);
  }
  return grant as McpGrant;
}

describe("the toolbox's list and call, under random grants (seeded property test)", () => {
  it("calls exactly what it lists, and refuses the rest before admitting or forwarding anything", async () => {
    const listings = universe();
    let forwarded = 0;
    let admitted = 0;
    const upstreams: McpUpstreams = {
      servers: [...SERVERS],
      tools: async (server) => listings[server] ?? [],
      prompts: async () => [],
      resources: async () => [],
      async callTool(server, tool): Promise<CallToolResult> {
        forwarded++;
        return { content: [{ type: "text", text: `${server}/${tool}` }] };
      },
      getPrompt: async () => ({ messages: [] }),
      readResource: async () => ({ contents: [] }),
      openSessions: async () => ({}),
      health: () => ({}),
      onListChanged: () => () => {},
      close: async () => {},
    };
    const toolbox = createMcpToolbox({
      settings: mcpSchema.parse({ servers: Object.fromEntries(SERVERS.map((s) => [s, { http: { url: "http://127.0.0.1:1/mcp" } }])) }),
      upstreams,
      grants: toolGrants,
      piiPolicy: () => NO_POLICY,
      argumentsSha256: () => "digest",
      accounting: {
        async admit() {
          admitted++;
          return { settle: () => {} };
        },
      },
    });
    const signal = new AbortController().signal;
    const everyName = [...Object.values(listings).flatMap((tools) => tools.map((t) => t.name)), "files_missing", "nowhere_read", "read"];
    const random = createRandom(4_848);
    let listedSomething = 0;
    let refusedSomething = 0;
    for (let round = 0; round < 400; round++) {
      const lineGrant = randomGrant(random);
      const teamGrant = randomGrant(random);
      const keyGrant = randomGrant(random);
      const narrow = random() < 0.3 ? randomGrant(random) : undefined;
      const businessLine = { name: "line", id: "line", limits: {}, ...(lineGrant ? { mcp: lineGrant } : {}) } as LevelSettings;
      const team = { name: "team", id: "team", limits: {}, businessLine: "line", ...(teamGrant ? { mcp: teamGrant } : {}) } as TeamSettings;
      const principal = { name: "k", id: "key-id", sha256: "ab".repeat(32), source: "config", team: "team", limits: {}, ...(keyGrant ? { mcp: keyGrant } : {}) } as Principal;
      const caller: McpCaller = { principal, team, businessLine, ...(narrow ? { narrow } : {}) };
      const listed = new Set((await toolbox.listTools(caller, signal)).map((t) => t.name));
      if (listed.size > 0) listedSomething++;
      for (const name of everyName) {
        const [forwardedBefore, admittedBefore] = [forwarded, admitted];
        const outcome = await toolbox.callTool(caller, name, {}, { signal, via: "mcp" }).then(
          () => "called",
          (error: unknown) => error,
        );
        if (listed.has(name)) {
          expect(outcome, `${name} was listed in round ${round}`).toBe("called");
          expect(forwarded - forwardedBefore).toBe(1);
        } else {
          refusedSomething++;
          expect(outcome, `${name} was not listed in round ${round}`).toBeInstanceOf(McpError);
          expect((outcome as McpError).code).toBe(MCP_ERRORS.toolNotFound);
          expect([forwarded, admitted]).toEqual([forwardedBefore, admittedBefore]);
        }
      }
    }
    // The random grants reached both sides of the property often.
    expect(listedSomething).toBeGreaterThan(40);
    expect(refusedSomething).toBeGreaterThan(1_000);
  });
});
