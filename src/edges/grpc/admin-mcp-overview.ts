import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { type AdminService, GetMcpOverviewResponseSchema, McpGrantHolderSchema, McpServerInfoSchema, McpToolCallSchema } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { type McpOverviewOptions, mcpOverview } from "../../mcp/mcp-overview.js";

type Guard = <R>(work: () => Promise<R>) => (ctx: HandlerContext) => Promise<R>;
type Impl = Omit<ServiceImpl<typeof AdminService>, "watchStats">;

/** A page's worth when the request does not say. */
const DEFAULT_RECENT_CALLS = 50;

/** AdminService.GetMcpOverview: the console's MCP page. */
export function adminMcpOverviewHandlers(options: McpOverviewOptions, guard: Guard): Pick<Impl, "getMcpOverview"> {
  return {
    getMcpOverview: (req, ctx) =>
      guard(async () => {
        const overview = await mcpOverview(options, req.recentCalls === 0 ? DEFAULT_RECENT_CALLS : req.recentCalls);
        return create(GetMcpOverviewResponseSchema, {
          servers: overview.servers.map((s) =>
            create(McpServerInfoSchema, {
              name: s.name,
              transport: s.transport,
              state: s.health?.state ?? "",
              tools: [...s.tools],
              lastError: s.health?.lastError ?? "",
              restarts: s.health?.restarts ?? 0,
              authMode: s.authMode,
            }),
          ),
          grants: overview.grants.map((g) =>
            create(McpGrantHolderSchema, {
              level: g.level,
              name: g.name,
              id: g.id,
              source: g.source,
              servers: [...(g.grant.servers ?? [])],
              allow: [...(g.grant.tools?.allow ?? [])],
              deny: [...(g.grant.tools?.deny ?? [])],
            }),
          ),
          recentCalls: overview.recentCalls.map((c) =>
            create(McpToolCallSchema, {
              time: timestampFromMs(c.at),
              keyId: c.keyId ?? "",
              keyName: c.keyName ?? "",
              server: c.server,
              tool: c.tool,
              outcome: c.outcome,
              durationMs: BigInt(Math.max(0, Math.round(c.durationMs))),
              resultBytes: BigInt(c.resultBytes),
              via: c.via ?? "",
              priceUsdMicros: BigInt(Math.round(c.priceUsd * 1_000_000)),
            }),
          ),
        });
      })(ctx),
  };
}
