import { z } from "zod";
import type { GatewayToolServer, GatewayToolsRequest } from "../../call/gateway-tool-loop.js";
import { clipClientValue, quoteClientValue } from "../../core/client-text.js";
import { GatewayError } from "../../core/errors.js";

/**
 * One `mcp_servers` entry of Anthropic's MCP connector: a server the
 * gateway runs tools of for this call (call/gateway-tool-loop.ts). `name`
 * names a server in `mcp.servers`; the `url` is never called (the gateway
 * calls only the servers it is configured with), and the server's
 * credentials are the gateway's own, so `authorization_token` is refused
 * rather than forwarded.
 */
const mcpServer = z.strictObject({
  type: z.literal("url"),
  name: z.string().min(1).max(64),
  url: z.string().max(4_096),
  authorization_token: z.string().nullish(),
  tool_configuration: z.strictObject({ allowed_tools: z.array(z.string().max(128)).max(1_000).nullish(), enabled: z.boolean().nullish() }).nullish(),
});

function invalid(field: string, problem: string): never {
  const at = clipClientValue(field);
  throw new GatewayError("invalid_request", `${at}: ${problem}`, { field: at });
}

/** The request's `mcp_servers` as servers for the gateway's tool loop; absent when it names none (or disables them all). */
export function mcpServersOf(wire: readonly unknown[] | null | undefined): GatewayToolsRequest | undefined {
  if (!wire || wire.length === 0) return undefined;
  const servers: GatewayToolServer[] = [];
  wire.forEach((value, i) => {
    const at = `mcp_servers[${i}]`;
    const parsed = mcpServer.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      invalid([at, ...issue.path.map(String)].join("."), issue.message);
    }
    const s = parsed.data;
    if (s.authorization_token != null) invalid(`${at}.authorization_token`, "is not forwarded: the gateway holds each MCP server's credentials itself");
    if (servers.some((o) => o.server === s.name)) invalid(`${at}.name`, `${quoteClientValue(s.name, 64)} is named twice`);
    if (s.tool_configuration?.enabled === false) return;
    const allowed = s.tool_configuration?.allowed_tools;
    servers.push({ server: s.name, field: `${at}.name`, ...(allowed == null ? {} : { allowedTools: allowed }) });
  });
  return servers.length > 0 ? { servers, via: "messages" } : undefined;
}
