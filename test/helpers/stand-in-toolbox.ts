import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { McpGrant } from "../../src/config/mcp-schema.js";
import { type ExposedTool, MCP_ERRORS, type McpCaller, McpError, type McpToolbox, NAME_SEPARATOR, type ToolboxCallOptions } from "../../src/mcp/contract.js";

/** One call the stand-in ran, with where it came from. */
export interface StandInCall {
  readonly name: string;
  readonly args: Record<string, unknown>;
  readonly via: ToolboxCallOptions["via"];
  readonly key?: string;
}

const glob = (pattern: string) => new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\-]/g, "\\$&").replaceAll("*", ".*")}$`);

function grants(grant: McpGrant | undefined, server: string, name: string): boolean {
  if (!grant) return false;
  if (grant.servers && !grant.servers.some((s) => s === "*" || s === server)) return false;
  if (grant.tools?.deny?.some((p) => glob(p).test(name))) return false;
  return grant.tools?.allow === undefined || grant.tools.allow.some((p) => glob(p).test(name));
}

/**
 * A toolbox over the official SDK client for the model-call tool loop's
 * tests, standing in for mcp/toolbox.ts (built on another branch) with the
 * part of its contract those tests rely on: the key's own grant (deny by
 * default, no levels), `<server>_<tool>` names, and the same predicate for
 * listing and calling. Replace with createMcpToolbox once it is merged.
 */
export function createStandInToolbox(servers: Readonly<Record<string, string>>): McpToolbox & { readonly calls: StandInCall[]; close(): Promise<void> } {
  const clients = new Map<string, Promise<Client>>();
  const calls: StandInCall[] = [];
  const client = (server: string) => {
    let c = clients.get(server);
    if (!c) {
      const made = new Client({ name: "sluice-stand-in", version: "1.0.0" });
      c = made.connect(new StreamableHTTPClientTransport(new URL(servers[server]!))).then(() => made);
      clients.set(server, c);
    }
    return c;
  };
  const granted = (caller: McpCaller, server: string, name: string) => caller.principal === undefined || grants(caller.principal.mcp, server, name);
  const list = async (caller: McpCaller): Promise<ExposedTool[]> => {
    const out: ExposedTool[] = [];
    for (const server of Object.keys(servers)) {
      const { tools } = await (await client(server)).listTools();
      for (const t of tools) {
        const name = `${server}${NAME_SEPARATOR}${t.name}`;
        if (granted(caller, server, name)) out.push({ name, server, upstreamName: t.name, definition: { ...t, name } });
      }
    }
    return out;
  };
  const unserved = async (): Promise<never> => {
    throw new McpError(MCP_ERRORS.methodNotFound, "not served by the stand-in");
  };
  return {
    calls,
    listTools: (caller) => list(caller),
    async callTool(caller, name, args, options) {
      const tool = (await list(caller)).find((t) => t.name === name);
      if (!tool) throw new McpError(MCP_ERRORS.toolNotFound, `unknown tool ${name}`);
      calls.push({ name, args, via: options.via, ...(caller.principal ? { key: caller.principal.name } : {}) });
      return (await (await client(tool.server)).callTool({ name: tool.upstreamName, arguments: args }, undefined, { signal: options.signal })) as CallToolResult;
    },
    listPrompts: unserved,
    getPrompt: unserved,
    listResources: unserved,
    readResource: unserved,
    async close() {
      for (const c of clients.values()) await (await c).close();
    },
  };
}
