import { expect } from "vitest";
import { argumentsDigest, ECHO_PRICE_USD, keyReachedServer, MCP_KEY_NAME, MCP_SERVER, type McpClientGateway } from "./mcp-gateway.js";
import { evidence, type Ran } from "./run.js";

/**
 * What one `tests_echo` call made by a real client through Sluice's `/mcp`
 * must leave behind, whichever client made it: the MCP server saw exactly
 * one call, with the gateway's identity and never the virtual key; the
 * ledger has it as a tool record of the key at the tool's price; the audit
 * log has it with a digest of the arguments and not their value; the
 * metrics count it.
 */
export async function expectOneEchoThroughSluice(g: McpClientGateway, said: string, ran: Ran): Promise<void> {
  const calls = g.server.calls("echo");
  expect(calls.length, evidence(ran)).toBe(1);
  expect(calls[0]!.authorization).toBe(g.identity);
  expect(keyReachedServer(g.server, g.key)).toBe(false);

  const rows = await g.toolLedgerRows();
  expect(rows, JSON.stringify(rows)).toHaveLength(1);
  expect(rows[0]).toMatchObject({ key_name: MCP_KEY_NAME, kind: "tool", tool_server: MCP_SERVER, tool_name: `${MCP_SERVER}_echo`, outcome: "completed" });
  expect(Number(rows[0]!.cost_micros)).toBe(ECHO_PRICE_USD * 1_000_000);

  const audited = (await g.auditEvents()).filter((e) => e.action === "mcp.tool_call");
  expect(audited.map((e) => e.target)).toEqual([`${MCP_SERVER}_echo`]);
  expect(audited[0]!.details).toMatchObject({ server: MCP_SERVER, tool: "echo", outcome: "ok", argumentsSha256: argumentsDigest({ text: said }) });
  expect(Object.values(audited[0]!.details).join(" ")).not.toContain(said);

  const metrics = await g.metrics();
  expect(metrics.value("sluice_mcp_tool_calls_total", { sluice_mcp_server: MCP_SERVER, sluice_mcp_outcome: "ok" })).toBe(1);
}
