import { z } from "zod";
import type { Config } from "../config/config.js";
import { type McpGrant, mcpGrantSchema } from "../config/mcp-schema.js";
import { KEY_BOUNDS } from "../config/schema.js";
import { quoteClientValue } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";

/** A budget as the admin service takes it: integer micro-dollars, within the configuration's bound. */
export const budgetSchema = z.strictObject({
  usdMicros: z
    .number()
    .int()
    .positive()
    .max(KEY_BOUNDS.maxBudgetUsd * 1_000_000),
  period: z.enum(["day", "week", "month"]),
});

/** The first problem of an admin request, as INVALID_ARGUMENT naming its field. */
export function invalid(issues: readonly z.core.$ZodIssue[]): GatewayError {
  const issue = issues[0]!;
  const field = issue.path.map(String).join(".") || "request";
  return new GatewayError("invalid_request", `${field}: ${issue.message}`, { field });
}

/** A key's, team's or business line's MCP grant as the admin service takes it: the configuration's own schema, so a runtime grant is bounded and read as a configured one is. */
export const mcpGrantField = mcpGrantSchema.optional();

/** A grant naming a server the configuration in force does not define is refused, as the configuration refuses one (config/mcp-grant-checks.ts). */
export function unknownMcpServer(grant: McpGrant | undefined, config: Config): void {
  const unknown = grant?.servers?.find((server) => server !== "*" && !Object.hasOwn(config.mcp.servers, server));
  if (unknown !== undefined) throw new GatewayError("invalid_request", `mcp.servers: unknown MCP server ${quoteClientValue(unknown)} (not in mcp.servers)`, { field: "mcp" });
}
