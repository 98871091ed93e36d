import { z } from "zod";
import type { GatewayToolServer } from "../../call/gateway-tool-loop.js";
import { invalidField, parseAt } from "./invalid-field.js";

/**
 * A Responses `{"type": "mcp"}` tool: a server the gateway runs tools of
 * for this call (call/gateway-tool-loop.ts). `server_label` names a
 * server in `mcp.servers`; a `server_url` is never called (the gateway
 * calls only the servers it is configured with), and credentials for the
 * server are the gateway's own, so `authorization` and `headers` are
 * refused rather than forwarded.
 */
const mcpTool = z.object({
  type: z.literal("mcp"),
  server_label: z.string().min(1).max(64),
  server_url: z.string().max(4_096).nullish(),
  server_description: z.string().nullish(),
  allowed_tools: z.union([z.array(z.string().max(128)).max(1_000), z.object({ tool_names: z.array(z.string().max(128)).max(1_000).nullish(), read_only: z.boolean().nullish() })]).nullish(),
  require_approval: z.unknown().optional(),
  authorization: z.unknown().optional(),
  headers: z.unknown().optional(),
  connector_id: z.unknown().optional(),
});

/** The `mcp` tool at `at` as a server for the gateway's tool loop; refuses what the gateway does not do, by name. */
export function mcpServerOf(value: unknown, at: string): GatewayToolServer {
  const t = parseAt(mcpTool, value, at);
  if (t.require_approval !== "never") {
    invalidField(`${at}.require_approval`, 'must be "never": the gateway runs MCP tools without asking, and approval requests are not supported');
  }
  if (t.connector_id != null) invalidField(`${at}.connector_id`, "connectors are not served: name a server of the gateway's mcp.servers in server_label");
  if (t.authorization != null || t.headers != null) {
    invalidField(`${at}.${t.authorization != null ? "authorization" : "headers"}`, "is not forwarded: the gateway holds each MCP server's credentials itself");
  }
  if (t.allowed_tools != null && !Array.isArray(t.allowed_tools) && t.allowed_tools.read_only != null) {
    invalidField(`${at}.allowed_tools.read_only`, "is not served: list the tools by name in tool_names");
  }
  const allowed = Array.isArray(t.allowed_tools) ? t.allowed_tools : (t.allowed_tools?.tool_names ?? undefined);
  return { server: t.server_label, field: `${at}.server_label`, ...(allowed == null ? {} : { allowedTools: allowed }) };
}

/** An `mcp_call` item sent back as input (an earlier turn's): what the model called and what it got. */
export const mcpCallItem = z.object({
  type: z.literal("mcp_call"),
  id: z.string().min(1).max(256),
  server_label: z.string().min(1).max(64),
  name: z.string().min(1).max(128),
  arguments: z.string(),
  output: z.string().nullish(),
  error: z.unknown().optional(),
});
