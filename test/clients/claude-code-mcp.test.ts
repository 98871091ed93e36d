import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nonce } from "./helpers/gateway.js";
import { expectOneEchoThroughSluice } from "./helpers/mcp-call-evidence.js";
import { CLIENT_SERVER_NAME, MCP_SERVER, type McpClientGateway, startMcpClientGateway } from "./helpers/mcp-gateway.js";
import { evidence, jsonLines, runClient, scratch } from "./helpers/run.js";
import { claudeBinary, named, runnable } from "./helpers/tier.js";

/**
 * Claude Code (`claude -p`) with Sluice as both its model (the Messages
 * edge, the simulator behind it) and its MCP server (`--mcp-config` with an
 * `http` server at `/mcp` and the virtual key in `headers`). The simulated
 * model calls `mcp__sluice__tests_echo`; Claude Code sends `tools/call` to
 * Sluice, which forwards it to the real MCP test server with the gateway's
 * own identity, and the answer quotes the tool's output. Tool search is
 * off (`ENABLE_TOOL_SEARCH=false`) so that the MCP tools are declared to
 * the model directly rather than behind Claude Code's ToolSearch.
 */
const CLAUDE = runnable([`@anthropic-ai/claude-code-${process.platform}-${process.arch}`]);
const TOOL = `mcp__${CLIENT_SERVER_NAME}__${MCP_SERVER}_echo`;

describe("Claude Code calling an MCP tool through Sluice's /mcp", () => {
  let g: McpClientGateway;
  beforeAll(async () => {
    if (CLAUDE.ok) g = await startMcpClientGateway("anthropic");
  });
  afterAll(() => g?.close());

  it.runIf(CLAUDE.ok)(named("calls tests_echo through the gateway: the server sees the gateway's identity, and the ledger, audit log and metrics show the call", CLAUDE), async () => {
    const said = nonce("mcp");
    const s = await scratch();
    const mcpConfig = { mcpServers: { [CLIENT_SERVER_NAME]: { type: "http", url: `${g.url}/mcp`, headers: { Authorization: `Bearer ${g.key}` } } } };
    const prompt = ["Call the echo tool and tell me what it said.", `#sim call=${TOOL} args=${JSON.stringify({ text: said })}`].join("\n");
    const ran = await runClient(claudeBinary(), ["-p", prompt, "--output-format", "stream-json", "--verbose", "--mcp-config", JSON.stringify(mcpConfig), "--strict-mcp-config", "--allowedTools", TOOL, "--max-turns", "4"], {
      cwd: s.work,
      env: {
        ...s.env,
        ANTHROPIC_BASE_URL: g.url,
        ANTHROPIC_API_KEY: g.key,
        ANTHROPIC_MODEL: "agent",
        ANTHROPIC_SMALL_FAST_MODEL: "agent",
        ANTHROPIC_DEFAULT_HAIKU_MODEL: "agent",
        ENABLE_TOOL_SEARCH: "false",
        DISABLE_TELEMETRY: "1",
        DISABLE_ERROR_REPORTING: "1",
        DISABLE_AUTOUPDATER: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      },
    });
    const events = jsonLines(ran.stdout);
    const result = events.find((e) => e.type === "result");
    expect(ran.hung, evidence(ran)).toBe(false);
    expect(result, evidence(ran)).toMatchObject({ subtype: "success", is_error: false });
    // Claude Code connected to the gateway as an MCP server and listed its tool.
    const init = events.find((e) => e.type === "system" && e.subtype === "init") as { mcp_servers?: Array<{ name: string; status: string }>; tools?: string[] } | undefined;
    expect(init?.mcp_servers, evidence(ran)).toEqual(expect.arrayContaining([expect.objectContaining({ name: CLIENT_SERVER_NAME, status: "connected" })]));
    expect(init?.tools, evidence(ran)).toContain(TOOL);
    // What the user sees: the answer quotes what the tool said.
    expect(String(result!.result), evidence(ran)).toContain(said);

    // The MCP server, the ledger, the audit log and the metrics all show the one call, made with the gateway's identity.
    await expectOneEchoThroughSluice(g, said, ran);
  });
});
