import { create } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { type AdminService, DeleteMcpCredentialResponseSchema, SetMcpCredentialResponseSchema } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { GatewayError } from "../../core/errors.js";
import type { McpCredentials } from "../../mcp/credentials/mcp-credentials.js";

type Guard = <R>(work: () => Promise<R>) => (ctx: HandlerContext) => Promise<R>;
type Impl = Omit<ServiceImpl<typeof AdminService>, "watchStats">;

const OFF = () => new GatewayError("failed_precondition", "no MCP credentials are held here: no mcp.servers entry has auth.mode per-key");

/** AdminService.SetMcpCredential and DeleteMcpCredential (docs/mcp.md, "Upstream identity"); the token goes in, never out. */
export function adminMcpCredentialHandlers(credentials: McpCredentials | undefined, guard: Guard): Pick<Impl, "setMcpCredential" | "deleteMcpCredential"> {
  return {
    setMcpCredential: (req, ctx) =>
      guard(async () => {
        if (!credentials) throw OFF();
        if (!req.expiresAt) throw new GatewayError("invalid_request", "expires_at: required (an access token without an expiry is not held)", { field: "expires_at" });
        const set = await credentials.set({ keyId: req.keyId, server: req.server, accessToken: req.accessToken, expiresAt: timestampMs(req.expiresAt) });
        return create(SetMcpCredentialResponseSchema, { keyId: set.keyId, server: set.server, audience: set.audience, expiresAt: timestampFromMs(set.expiresAt) });
      })(ctx),
    deleteMcpCredential: (req, ctx) =>
      guard(async () => {
        if (!credentials) throw OFF();
        return create(DeleteMcpCredentialResponseSchema, { deleted: await credentials.delete(req.keyId, req.server) });
      })(ctx),
  };
}
