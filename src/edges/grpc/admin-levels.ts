import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  type AdminService,
  BusinessLineInfoSchema,
  CreateBusinessLineResponseSchema,
  CreateTeamResponseSchema,
  DeleteBusinessLineResponseSchema,
  DeleteTeamResponseSchema,
  KeySource,
  ListBusinessLinesResponseSchema,
  ListTeamsResponseSchema,
  TeamInfoSchema,
  UpdateBusinessLineResponseSchema,
  UpdateTeamResponseSchema,
} from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import type { LevelAdmin, LevelInfo, LevelPatch } from "../../tenancy/level-admin.js";
import { mcpGrantOf, mcpGrantToProto } from "./admin-mcp-grant.js";
import { budgetOf, budgetToProto, limitsOf, limitsToProto, maskedFields } from "./admin-wire.js";

type Guard = <R>(work: () => Promise<R>) => (ctx: HandlerContext) => Promise<R>;

const common = (info: LevelInfo) => ({
  name: info.name,
  id: info.id,
  limits: limitsToProto(info.limits),
  ...budgetToProto(info.budget),
  ...mcpGrantToProto(info.mcp),
  source: info.source === "config" ? KeySource.CONFIG : KeySource.RUNTIME,
  ...(info.createdAt === undefined ? {} : { createdAt: timestampFromMs(info.createdAt) }),
});
const teamInfo = (info: LevelInfo) => create(TeamInfoSchema, { ...common(info), businessLine: info.businessLine ?? "" });
const lineInfo = (info: LevelInfo) => create(BusinessLineInfoSchema, common(info));

/**
 * AdminService's teams and business lines (docs/tenancy.md, "Teams and
 * business lines"), over the level admin; `guard` authorizes each call
 * first, as for keys.
 */
export function levelHandlers(
  levels: LevelAdmin,
  guard: Guard,
): Pick<ServiceImpl<typeof AdminService>, "createTeam" | "updateTeam" | "deleteTeam" | "listTeams" | "createBusinessLine" | "updateBusinessLine" | "deleteBusinessLine" | "listBusinessLines"> {
  const spec = (name: string, businessLine: string, limits: Parameters<typeof limitsOf>[0], budget: Parameters<typeof budgetOf>[0], grant: Parameters<typeof mcpGrantOf>[0]) => {
    const b = budgetOf(budget);
    const mcp = mcpGrantOf(grant);
    return { name, ...(businessLine === "" ? {} : { businessLine }), limits: limitsOf(limits), ...(b ? { budget: b } : {}), ...(mcp ? { mcp } : {}) };
  };
  const patchOf = <F extends "business_line" | "limits" | "budget" | "mcp">(
    fields: ReadonlySet<F>,
    req: { businessLine?: string; limits?: Parameters<typeof limitsOf>[0]; budget?: Parameters<typeof budgetOf>[0]; mcp?: Parameters<typeof mcpGrantOf>[0] },
  ): LevelPatch => {
    const has = (f: string) => fields.has(f as F);
    const budget = budgetOf(req.budget);
    return {
      ...(has("business_line") ? { businessLine: req.businessLine ? req.businessLine : null } : {}),
      ...(has("limits") ? { limits: limitsOf(req.limits) } : {}),
      ...(has("budget") ? { budget: budget ?? null } : {}),
      ...(has("mcp") ? { mcp: mcpGrantOf(req.mcp) ?? null } : {}),
    };
  };
  return {
    createTeam: (req, ctx) => guard(async () => create(CreateTeamResponseSchema, { team: teamInfo(await levels.create("team", spec(req.name, req.businessLine, req.limits, req.budget, req.mcp))) }))(ctx),
    updateTeam: (req, ctx) =>
      guard(async () => {
        const fields = maskedFields(req.updateMask, ["business_line", "limits", "budget", "mcp"] as const, {
          business_line: req.businessLine !== "",
          limits: req.limits !== undefined,
          budget: req.budget !== undefined,
          mcp: req.mcp !== undefined,
        });
        return create(UpdateTeamResponseSchema, { team: teamInfo(await levels.update("team", req.name, patchOf(fields, req))) });
      })(ctx),
    deleteTeam: (req, ctx) => guard(async () => create(DeleteTeamResponseSchema, { team: teamInfo(await levels.remove("team", req.name)) }))(ctx),
    listTeams: (_req, ctx) => guard(async () => create(ListTeamsResponseSchema, { teams: (await levels.list("team")).map(teamInfo) }))(ctx),
    createBusinessLine: (req, ctx) => guard(async () => create(CreateBusinessLineResponseSchema, { businessLine: lineInfo(await levels.create("business_line", spec(req.name, "", req.limits, req.budget, req.mcp))) }))(ctx),
    updateBusinessLine: (req, ctx) =>
      guard(async () => {
        const fields = maskedFields(req.updateMask, ["limits", "budget", "mcp"] as const, { limits: req.limits !== undefined, budget: req.budget !== undefined, mcp: req.mcp !== undefined });
        return create(UpdateBusinessLineResponseSchema, { businessLine: lineInfo(await levels.update("business_line", req.name, patchOf(fields, req))) });
      })(ctx),
    deleteBusinessLine: (req, ctx) => guard(async () => create(DeleteBusinessLineResponseSchema, { businessLine: lineInfo(await levels.remove("business_line", req.name)) }))(ctx),
    listBusinessLines: (_req, ctx) => guard(async () => create(ListBusinessLinesResponseSchema, { businessLines: (await levels.list("business_line")).map(lineInfo) }))(ctx),
  };
}
