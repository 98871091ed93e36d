import { create } from "@bufbuild/protobuf";
import { McpGrantSchema, McpNamesSchema, type McpGrant as ProtoMcpGrant } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import type { McpGrant } from "../../config/mcp-schema.js";

/**
 * An MCP grant between the admin service's wire and the settings, both
 * ways. Presence carries meaning: an unset `servers` or `allow` is "every",
 * a set and empty one "none", as in the configuration. Bounds and names are
 * checked by the admins with the configuration's own schema.
 */
export function mcpGrantOf(grant: ProtoMcpGrant | undefined): McpGrant | undefined {
  if (!grant) return undefined;
  const tools = {
    ...(grant.allow ? { allow: [...grant.allow.values] } : {}),
    ...(grant.deny.length > 0 ? { deny: [...grant.deny] } : {}),
  };
  return { ...(grant.servers ? { servers: [...grant.servers.values] } : {}), ...(Object.keys(tools).length > 0 ? { tools } : {}) };
}

export function mcpGrantToProto(grant: McpGrant | undefined): { mcp?: ProtoMcpGrant } {
  if (!grant) return {};
  return {
    mcp: create(McpGrantSchema, {
      ...(grant.servers ? { servers: create(McpNamesSchema, { values: grant.servers }) } : {}),
      ...(grant.tools?.allow ? { allow: create(McpNamesSchema, { values: grant.tools.allow }) } : {}),
      deny: grant.tools?.deny ?? [],
    }),
  };
}
