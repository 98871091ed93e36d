import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCodex } from "./helpers/codex.js";
import { nonce } from "./helpers/gateway.js";
import { expectOneEchoThroughSluice } from "./helpers/mcp-call-evidence.js";
import { CLIENT_SERVER_NAME, MCP_SERVER, type McpClientGateway, startMcpClientGateway } from "./helpers/mcp-gateway.js";
import { evidence, jsonLines } from "./helpers/run.js";
import { named, runnable } from "./helpers/tier.js";

/**
 * Codex CLI (`codex exec`) with Sluice as both its model provider (the
 * Responses edge, the simulator behind it) and a streamable HTTP MCP
 * server: `[mcp_servers.sluice]` with `url = "<gateway>/mcp"` and
 * `bearer_token_env_var` naming the variable that holds the virtual key.
 * The simulated model calls the gateway's `tests_echo` as Codex declares
 * it; Codex sends `tools/call` to Sluice, which forwards it to the real
 * MCP test server with the gateway's own identity.
 */
const CODEX = runnable(["@openai/codex"]);
/** How Codex 0.169.0 names an MCP server's tool to the model: the server's name in its config, then the tool's. */
const TOOL = `mcp__${CLIENT_SERVER_NAME}__${MCP_SERVER}_echo`;

describe("Codex CLI calling an MCP tool through Sluice's /mcp", () => {
  let g: McpClientGateway;
  beforeAll(async () => {
    if (CODEX.ok) g = await startMcpClientGateway("openai-responses");
  });
  afterAll(() => g?.close());

  it.runIf(CODEX.ok)(named("calls tests_echo through the gateway: the server sees the gateway's identity, and the ledger, audit log and metrics show the call", CODEX), async () => {
    const said = nonce("mcp");
    const prompt = ["Call the echo tool and tell me what it said.", `#sim call=${TOOL} args=${JSON.stringify({ text: said })}`].join("\n");
    const { ran, last } = await runCodex(g, g.key, prompt, {
      config: [`[mcp_servers.${CLIENT_SERVER_NAME}]`, `url = "${g.url}/mcp"`, `bearer_token_env_var = "SLUICE_MCP_KEY"`],
      env: { SLUICE_MCP_KEY: g.key },
    });
    expect(ran.hung, evidence(ran)).toBe(false);
    expect(ran.code, evidence(ran)).toBe(0);
    // Codex ran the call as an MCP tool call of its `sluice` server, and it succeeded.
    const items = jsonLines(ran.stdout)
      .filter((e) => e.type === "item.completed")
      .map((e) => e.item as { type?: string; server?: string; tool?: string; status?: string });
    const mcpCalls = items.filter((i) => i.type === "mcp_tool_call");
    expect(mcpCalls, evidence(ran)).toEqual([expect.objectContaining({ server: CLIENT_SERVER_NAME, tool: `${MCP_SERVER}_echo`, status: "completed" })]);
    // What the user sees: the last message quotes what the tool said.
    expect(last, evidence(ran)).toContain(said);

    // The MCP server, the ledger, the audit log and the metrics all show the one call, made with the gateway's identity.
    await expectOneEchoThroughSluice(g, said, ran);
  });
});
