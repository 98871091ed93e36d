import { create } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  type AdminService,
  AliasCacheStatsSchema,
  type Budget,
  CreateKeyResponseSchema,
  GetCacheStatsResponseSchema,
  GetUsageResponseSchema,
  KeyInfoSchema,
  KeySource,
  ListKeysResponseSchema,
  type KeyInfo as ProtoKeyInfo,
  type KeyLimits as ProtoKeyLimits,
  type McpGrant as ProtoMcpGrant,
  PurgeCacheResponseSchema,
  RevokeKeyResponseSchema,
  UpdateKeyResponseSchema,
} from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import type { AuditLog } from "../../audit/audit-log.js";
import { type AuditTrail, NO_AUDIT } from "../../audit/audit-trail.js";
import type { CacheAdmin } from "../../cache/cache-admin.js";
import type { KeySettings } from "../../config/config.js";
import { mcpSchema } from "../../config/mcp-schema.js";
import type { Evaluations } from "../../evaluation/evaluations.js";
import type { ShadowRunner } from "../../evaluation/shadow.js";
import type { TenancyObserver } from "../../flow/observer.js";
import type { SpendReports } from "../../ledger/spend-reports.js";
import type { McpCredentials } from "../../mcp/credentials/mcp-credentials.js";
import type { McpOverviewOptions } from "../../mcp/mcp-overview.js";
import type { ProviderKeys } from "../../provider-keys/provider-keys.js";
import type { ResponsesAdmin } from "../../response-state/responses-admin.js";
import { AuthError } from "../../tenancy/authenticate.js";
import type { KeyAdmin, KeyInfo, KeyPatch } from "../../tenancy/key-admin.js";
import { audited, auditHandlers } from "./admin-audit.js";
import { type AdminBatches, adminBatchHandlers } from "./admin-batches.js";
import { evaluationHandlers } from "./admin-evaluation.js";
import { levelHandlers } from "./admin-levels.js";
import { adminMcpCredentialHandlers } from "./admin-mcp-credentials.js";
import { mcpGrantOf, mcpGrantToProto } from "./admin-mcp-grant.js";
import { adminMcpOverviewHandlers } from "./admin-mcp-overview.js";
import { adminProviderKeyHandlers } from "./admin-provider-keys.js";
import { adminResponseHandlers } from "./admin-responses.js";
import { getSpendReport } from "./admin-spend.js";
import { budgetOf, budgetToProto, limitsOf, limitsToProto, maskedFields, PERIODS, periodKind } from "./admin-wire.js";
import { toConnectError } from "./connect-errors.js";
import { withCheckedText } from "./request-text.js";
import { EXCHANGE } from "./rpc-handler.js";

const remoteOf = (ctx: HandlerContext) => {
  const remote = ctx.values.get(EXCHANGE)?.remote;
  return remote ? { remote } : {};
};

/** Wire values to settings; bounds are checked by the key admin, as for configured keys. */
function settingsOf(name: string, team: string, models: readonly string[], limits: ProtoKeyLimits | undefined, budget: Budget | undefined, grant: ProtoMcpGrant | undefined): KeySettings {
  const b = budgetOf(budget);
  const mcp = mcpGrantOf(grant);
  return { name, ...(team === "" ? {} : { team }), ...(models.length > 0 ? { models } : {}), limits: limitsOf(limits), ...(b ? { budget: b } : {}), ...(mcp ? { mcp } : {}) };
}

function keyInfo(info: KeyInfo): ProtoKeyInfo {
  return create(KeyInfoSchema, {
    name: info.name,
    id: info.id,
    team: info.team ?? "",
    models: [...(info.models ?? [])],
    limits: limitsToProto(info.limits),
    ...budgetToProto(info.budget),
    ...mcpGrantToProto(info.mcp),
    source: info.source === "config" ? KeySource.CONFIG : KeySource.RUNTIME,
    ...(info.createdAt === undefined ? {} : { createdAt: timestampFromMs(info.createdAt) }),
  });
}

const KEY_FIELDS = ["models", "limits", "budget", "team", "mcp"] as const;
/** The MCP page without an MCP configuration: no servers. */
const NO_MCP = mcpSchema.parse({});

/**
 * sluice.admin.v1.AdminService: the key admin behind the admin key. Every
 * call is authorized first, before its request is looked at. WatchStats
 * lives with the console's statistics (watch-stats.ts); the server joins
 * the two.
 */
export function createAdminService(
  admin: KeyAdmin,
  cache: CacheAdmin,
  reports: SpendReports,
  audit: { readonly log?: AuditLog; readonly trail: AuditTrail; readonly authFailed?: TenancyObserver["authenticated"] } = { trail: NO_AUDIT },
  features: {
    readonly evaluations?: Evaluations;
    readonly shadow?: ShadowRunner;
    readonly batches?: AdminBatches;
    readonly responses?: ResponsesAdmin;
    readonly mcpCredentials?: McpCredentials;
    /** Provider API keys set at run time (SetProviderKey); absent: those calls answer FAILED_PRECONDITION. */
    readonly providerKeys?: ProviderKeys;
    /** What the MCP page needs beside the keys and levels this service lists. */
    readonly mcp?: Pick<McpOverviewOptions, "settings" | "upstreams" | "recent" | "ledger">;
  } = {},
): Omit<ServiceImpl<typeof AdminService>, "watchStats"> {
  const guarded =
    <R>(work: () => Promise<R>) =>
    async (ctx: HandlerContext): Promise<R> => {
      try {
        admin.authorize(ctx.requestHeader.get("authorization") ?? undefined);
      } catch (error) {
        if (error instanceof AuthError) audit.authFailed?.({ edge: "admin", failure: error.failure, ...remoteOf(ctx) });
        throw toConnectError(error);
      }
      try {
        return await work();
      } catch (error) {
        throw toConnectError(error);
      }
    };
  const authorized = (ctx: HandlerContext) => {
    try {
      admin.authorize(ctx.requestHeader.get("authorization") ?? undefined);
      return true;
    } catch {
      return false;
    }
  };
  // Every request's text is checked (no control character in an id, a name, a filter) before its call reads it.
  return audited(
    withCheckedText(
      {
        createKey: (req, ctx) =>
          guarded(async () => {
            const { key, info } = await admin.create(settingsOf(req.name, req.team, req.models, req.limits, req.budget, req.mcp));
            return create(CreateKeyResponseSchema, { key, info: keyInfo(info) });
          })(ctx),
        listKeys: (_req, ctx) => guarded(async () => create(ListKeysResponseSchema, { keys: (await admin.list()).map(keyInfo) }))(ctx),
        updateKey: (req, ctx) =>
          guarded(async () => {
            const fields = maskedFields(req.updateMask, KEY_FIELDS, {
              models: req.models.length > 0,
              limits: req.limits !== undefined,
              budget: req.budget !== undefined,
              team: req.team !== "",
              mcp: req.mcp !== undefined,
            });
            const budget = budgetOf(req.budget);
            const patch: KeyPatch = {
              ...(fields.has("models") ? { models: req.models.length > 0 ? req.models : null } : {}),
              ...(fields.has("limits") ? { limits: limitsOf(req.limits) } : {}),
              ...(fields.has("budget") ? { budget: budget ?? null } : {}),
              ...(fields.has("team") ? { team: req.team === "" ? null : req.team } : {}),
              ...(fields.has("mcp") ? { mcp: mcpGrantOf(req.mcp) ?? null } : {}),
            };
            return create(UpdateKeyResponseSchema, { key: keyInfo(await admin.update(req.name, patch)) });
          })(ctx),
        revokeKey: (req, ctx) => guarded(async () => create(RevokeKeyResponseSchema, { key: keyInfo(await admin.revoke(req.name)) }))(ctx),
        getUsage: (req, ctx) =>
          guarded(async () => {
            const usage = await admin.usage(req.id === "" ? { name: req.name } : { id: req.id }, periodKind(req.period), req.at ? timestampMs(req.at) : undefined);
            const t = usage.totals;
            return create(GetUsageResponseSchema, {
              name: usage.name,
              id: usage.id,
              period: PERIODS[usage.period.kind],
              periodStart: timestampFromMs(usage.period.startMs),
              periodEnd: timestampFromMs(usage.period.endMs),
              requests: BigInt(t.requests),
              inputTokens: BigInt(t.inputTokens),
              outputTokens: BigInt(t.outputTokens),
              cachedInputTokens: BigInt(t.cachedInputTokens),
              reasoningTokens: BigInt(t.reasoningTokens),
              spendUsdMicros: BigInt(t.spendMicros),
              estimatedRequests: BigInt(t.estimatedRequests),
              reservedUsdMicros: BigInt(Math.max(0, t.reservedMicros)),
              ...(usage.budgetMicros === undefined ? {} : { budgetUsdMicros: BigInt(usage.budgetMicros) }),
            });
          })(ctx),
        ...levelHandlers(admin.levels, guarded),
        getSpendReport: (req, ctx) => guarded(() => getSpendReport(reports, req))(ctx),
        ...auditHandlers(audit.log, guarded),
        ...evaluationHandlers(features.evaluations, features.shadow, guarded),
        ...adminBatchHandlers(features.batches, guarded),
        ...adminResponseHandlers(features.responses, guarded),
        ...adminMcpCredentialHandlers(features.mcpCredentials, guarded),
        ...adminProviderKeyHandlers(features.providerKeys, guarded),
        ...adminMcpOverviewHandlers(
          {
            settings: features.mcp?.settings ?? (() => NO_MCP),
            ...(features.mcp?.upstreams ? { upstreams: features.mcp.upstreams } : {}),
            ...(features.mcp?.ledger ? { ledger: features.mcp.ledger } : {}),
            recent: features.mcp?.recent ?? { add: () => undefined, latest: () => [] },
            keys: () => admin.list(),
            levels: (kind) => admin.levels.list(kind),
          },
          guarded,
        ),
        purgeCache: (req, ctx) => guarded(async () => create(PurgeCacheResponseSchema, { purged: BigInt(await cache.purge(req.alias, req.keyName, req.requestId)) }))(ctx),
        getCacheStats: (_req, ctx) =>
          guarded(async () =>
            create(GetCacheStatsResponseSchema, {
              aliases: (await cache.stats()).map((s) =>
                create(AliasCacheStatsSchema, {
                  alias: s.alias,
                  hits: BigInt(s.hits),
                  misses: BigInt(s.misses),
                  bypasses: BigInt(s.bypasses),
                  errors: BigInt(s.errors),
                  hitRate: s.hitRate,
                  entries: BigInt(s.entries),
                  savedUsdMicros: BigInt(s.savedMicros),
                  semanticHits: BigInt(s.semanticHits),
                }),
              ),
            }),
          )(ctx),
      },
      authorized,
    ),
    audit.trail,
  );
}
