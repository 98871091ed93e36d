import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { NO_POLICY, type RequestPolicy } from "../src/compliance/pii-policy.js";
import { mcpSchema } from "../src/config/mcp-schema.js";
import { PII_KINDS } from "../src/config/pii-kinds.js";
import { type ExposedTool, MCP_ERRORS, type McpCaller, McpError, type McpUpstreams, type ToolCallFacts, type ToolCallSettlement } from "../src/mcp/contract.js";
import { toolGrants } from "../src/mcp/grants.js";
import { createMcpToolbox } from "../src/mcp/toolbox.js";
import type { Principal } from "../src/tenancy/principal.js";

/** An in-process upstream side: two servers whose tools echo their arguments, recording what was forwarded. */
function fakeUpstreams() {
  const forwarded: Array<{ server: string; tool: string; args: Record<string, unknown>; sessionId?: string }> = [];
  const tool = (server: string, name: string): ExposedTool => ({ name: `${server}_${name}`, server, upstreamName: name, definition: { name: `${server}_${name}`, inputSchema: { type: "object" } } });
  const listings: Record<string, ExposedTool[]> = { files: [tool("files", "read"), tool("files", "write")], web: [tool("web", "fetch")] };
  const resources: Record<string, string[]> = { files: ["file:///a", "shared://x"], web: ["shared://x", "https://b"] };
  const upstreams: McpUpstreams = {
    servers: ["files", "web"],
    tools: async (server) => listings[server] ?? [],
    prompts: async () => [],
    resources: async (server) => (resources[server] ?? []).map((uri) => ({ server, definition: { uri, name: uri } })),
    async callTool(server, tool, args, options): Promise<CallToolResult> {
      forwarded.push({ server, tool, args, ...(options.sessionId ? { sessionId: options.sessionId } : {}) });
      if (tool === "write") throw new McpError(MCP_ERRORS.timeout, "files did not answer within 100 ms");
      return { content: [{ type: "text", text: `got ${JSON.stringify(args)}` }] };
    },
    getPrompt: async () => ({ messages: [] }),
    readResource: async (server, uri) => ({ contents: [{ uri, text: `${server}:${uri}` }] }),
    openSessions: async () => ({}),
    health: () => ({}),
    onListChanged: () => () => {},
    close: async () => {},
  };
  return { upstreams, forwarded };
}

function principal(mcp?: Principal["mcp"]): Principal {
  return { name: "k", id: "abc", sha256: "ab".repeat(32), source: "config", ...(mcp ? { mcp } : {}) } as Principal;
}

function setup(policy: RequestPolicy = NO_POLICY) {
  const { upstreams, forwarded } = fakeUpstreams();
  const admitted: ToolCallFacts[] = [];
  const settled: ToolCallSettlement[] = [];
  const settings = mcpSchema.parse({
    servers: {
      files: {
        http: { url: "http://127.0.0.1:1/mcp" },
        price: { perCall: 0.01 },
        tools: { read: { arguments: { type: "object", properties: { path: { type: "string", pattern: "^/srv/" } }, required: ["path"] }, price: { perCall: 0.5 } } },
      },
      web: { http: { url: "http://127.0.0.1:2/mcp" } },
    },
  });
  let clock = 1_000;
  const toolbox = createMcpToolbox({
    settings,
    upstreams,
    grants: toolGrants,
    piiPolicy: () => policy,
    argumentsSha256: (args) => `sha-of-${JSON.stringify(args)}`,
    accounting: {
      async admit(_caller, facts) {
        admitted.push(facts);
        return { settle: (s) => void settled.push(s) };
      },
    },
    now: () => (clock += 5),
  });
  return { toolbox, forwarded, admitted, settled };
}

const signal = new AbortController().signal;
const options = { signal, via: "mcp" as const };
const everything: McpCaller = { principal: principal({ servers: ["*"] }) };

async function refusal(promise: Promise<unknown>): Promise<McpError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
}

describe("the MCP toolbox", () => {
  it("lists only granted tools, and calls one with its price, settling it once with duration and bytes", async () => {
    const { toolbox, forwarded, admitted, settled } = setup();
    const caller: McpCaller = { principal: principal({ servers: ["files"], tools: { deny: ["files_write"] } }), upstreamSessions: { files: "up-1" } };
    expect((await toolbox.listTools(caller, signal)).map((t) => t.name)).toEqual(["files_read"]);
    const result = await toolbox.callTool(caller, "files_read", { path: "/srv/a" }, options);
    expect(result.content[0]).toEqual({ type: "text", text: 'got {"path":"/srv/a"}' });
    expect(forwarded).toEqual([{ server: "files", tool: "read", args: { path: "/srv/a" }, sessionId: "up-1" }]);
    expect(admitted[0]).toMatchObject({ server: "files", tool: "files_read", upstreamTool: "read", priceUsd: 0.5, argumentsSha256: 'sha-of-{"path":"/srv/a"}', via: "mcp" });
    expect(settled).toEqual([{ outcome: "ok", durationMs: 5, resultBytes: Buffer.byteLength(JSON.stringify(result)) }]);
  });

  it("refuses an ungranted tool and an unknown one with the same error, before anything is forwarded or charged", async () => {
    const { toolbox, forwarded, admitted } = setup();
    const caller: McpCaller = { principal: principal({ servers: ["files"], tools: { deny: ["files_write"] } }) };
    const ungranted = await refusal(toolbox.callTool(caller, "files_write", {}, options));
    const unknown = await refusal(toolbox.callTool(caller, "files_nope", {}, options));
    const otherServer = await refusal(toolbox.callTool(caller, "web_fetch", {}, options));
    for (const e of [ungranted, unknown, otherServer]) expect(e.code).toBe(MCP_ERRORS.toolNotFound);
    expect(ungranted.message.replace("files_write", "X")).toBe(unknown.message.replace("files_nope", "X"));
    const keyWithoutGrant = await refusal(toolbox.callTool({ principal: principal() }, "files_read", { path: "/srv/a" }, options));
    expect(keyWithoutGrant.code).toBe(MCP_ERRORS.toolNotFound);
    expect(await toolbox.listTools({ principal: principal() }, signal)).toEqual([]);
    expect(forwarded).toEqual([]);
    expect(admitted).toEqual([]);
  });

  it("refuses arguments outside the operator's constraint, naming the path, before admission", async () => {
    const { toolbox, forwarded, admitted } = setup();
    const error = await refusal(toolbox.callTool(everything, "files_read", { path: "/etc/passwd" }, options));
    expect(error.code).toBe(MCP_ERRORS.invalidParams);
    expect(error.message).toContain("arguments/path");
    expect(error.data).toEqual({ path: "/path" });
    expect(error.message).not.toContain("/etc/passwd");
    const missing = await refusal(toolbox.callTool(everything, "files_read", {}, options));
    expect(missing.message).toContain("path");
    expect(forwarded).toEqual([]);
    expect(admitted).toEqual([]);
  });

  it("redacts personal data in the arguments before they leave and restores it in the result", async () => {
    const { toolbox, forwarded, admitted } = setup({ ...NO_POLICY, mode: "redact", kinds: new Set(PII_KINDS) });
    const result = await toolbox.callTool(everything, "web_fetch", { to: "ada@example.com", nested: { list: ["ada@example.com"] } }, options);
    expect(forwarded[0]!.args).toEqual({ to: "<EMAIL_1>", nested: { list: ["<EMAIL_1>"] } });
    expect(result.content[0]).toEqual({ type: "text", text: 'got {"to":"ada@example.com","nested":{"list":["ada@example.com"]}}' });
    // The charge's digest is of what the caller sent.
    expect(admitted[0]!.argumentsSha256).toContain("ada@example.com");
  });

  it("blocks a call holding personal data under `block`, naming the kinds and not the values", async () => {
    const { toolbox, forwarded } = setup({ ...NO_POLICY, mode: "block", kinds: new Set(PII_KINDS) });
    const error = await refusal(toolbox.callTool(everything, "web_fetch", { to: "ada@example.com" }, options));
    expect(error.code).toBe(MCP_ERRORS.blocked);
    expect(error.message).toContain("email");
    expect(error.message).not.toContain("ada@example.com");
    await expect(toolbox.callTool(everything, "web_fetch", { to: "nobody" }, options)).resolves.toBeDefined();
    expect(forwarded).toHaveLength(1);
  });

  it("refuses a tool call for a key kept on local targets", async () => {
    const { toolbox, forwarded } = setup({ ...NO_POLICY, localOnly: true, keptLocal: true });
    expect((await refusal(toolbox.callTool(everything, "web_fetch", {}, options))).code).toBe(MCP_ERRORS.blocked);
    expect(forwarded).toEqual([]);
  });

  it("settles a failed call with its outcome and passes the error on", async () => {
    const { toolbox, settled } = setup();
    const error = await refusal(toolbox.callTool(everything, "files_write", {}, options));
    expect(error.code).toBe(MCP_ERRORS.timeout);
    expect(settled).toEqual([expect.objectContaining({ outcome: "timeout", resultBytes: 0 })]);
  });

  it("reads a resource from the one granted server listing it, and refuses an ambiguous URI", async () => {
    const { toolbox } = setup();
    expect((await toolbox.readResource(everything, "https://b", signal)).contents[0]).toMatchObject({ text: "web:https://b" });
    expect((await refusal(toolbox.readResource(everything, "shared://x", signal))).message).toContain("more than one server");
    const filesOnly: McpCaller = { principal: principal({ servers: ["files"] }) };
    expect((await toolbox.readResource(filesOnly, "shared://x", signal)).contents[0]).toMatchObject({ text: "files:shared://x" });
    expect((await refusal(toolbox.readResource(filesOnly, "https://b", signal))).message).toBe("unknown resource");
  });
});
