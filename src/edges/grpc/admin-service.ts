import { create } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { BudgetPeriod, KeySettings } from "../../config/config.js";
import type { KeyAdmin, KeyInfo } from "../../tenancy/key-admin.js";
import type { CacheAdmin } from "../../cache/cache-admin.js";
import {
  AdminService,
  AliasCacheStatsSchema,
  type Budget,
  CreateKeyResponseSchema,
  GetCacheStatsResponseSchema,
  GetUsageResponseSchema,
  type KeyInfo as ProtoKeyInfo,
  KeyInfoSchema,
  type KeyLimits as ProtoKeyLimits,
  KeySource,
  ListKeysResponseSchema,
  Period,
  PurgeCacheResponseSchema,
  RevokeKeyResponseSchema,
} from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import { toConnectError } from "./connect-errors.js";

const PERIODS: Record<BudgetPeriod, Period> = { day: Period.DAY, week: Period.WEEK, month: Period.MONTH };

function periodKind(period: Period): BudgetPeriod | undefined {
  switch (period) {
    case Period.DAY:
      return "day";
    case Period.WEEK:
      return "week";
    case Period.MONTH:
      return "month";
    default:
      return undefined;
  }
}

/** Wire values to settings; bounds are checked by the key admin, as for configured keys. */
function settingsOf(name: string, models: readonly string[], limits: ProtoKeyLimits | undefined, budget: Budget | undefined): KeySettings {
  return {
    name,
    ...(models.length > 0 ? { models } : {}),
    limits: {
      ...(limits?.requestsPerMinute === undefined ? {} : { requestsPerMinute: limits.requestsPerMinute }),
      ...(limits?.tokensPerMinute === undefined ? {} : { tokensPerMinute: Number(limits.tokensPerMinute) }),
      ...(limits?.concurrentStreams === undefined ? {} : { concurrentStreams: limits.concurrentStreams }),
    },
    ...(budget ? { budget: { usdMicros: Number(budget.usdMicros), period: periodKind(budget.period) ?? "month" } } : {}),
  };
}

function keyInfo(info: KeyInfo): ProtoKeyInfo {
  return create(KeyInfoSchema, {
    name: info.name,
    id: info.id,
    models: [...(info.models ?? [])],
    limits: {
      ...(info.limits.requestsPerMinute === undefined ? {} : { requestsPerMinute: info.limits.requestsPerMinute }),
      ...(info.limits.tokensPerMinute === undefined ? {} : { tokensPerMinute: BigInt(info.limits.tokensPerMinute) }),
      ...(info.limits.concurrentStreams === undefined ? {} : { concurrentStreams: info.limits.concurrentStreams }),
    },
    ...(info.budget ? { budget: { usdMicros: BigInt(info.budget.usdMicros), period: PERIODS[info.budget.period] } } : {}),
    source: info.source === "config" ? KeySource.CONFIG : KeySource.RUNTIME,
    ...(info.createdAt === undefined ? {} : { createdAt: timestampFromMs(info.createdAt) }),
  });
}

/**
 * sluice.admin.v1.AdminService: the key admin behind the admin key. Every
 * call is authorized first, before its request is looked at. WatchStats
 * lives with the console's statistics (watch-stats.ts); the server joins
 * the two.
 */
export function createAdminService(admin: KeyAdmin, cache: CacheAdmin): Omit<ServiceImpl<typeof AdminService>, "watchStats"> {
  const guarded =
    <R>(work: () => Promise<R>) =>
    async (ctx: HandlerContext): Promise<R> => {
      try {
        admin.authorize(ctx.requestHeader.get("authorization") ?? undefined);
        return await work();
      } catch (error) {
        throw toConnectError(error);
      }
    };
  return {
    createKey: (req, ctx) =>
      guarded(async () => {
        const { key, info } = await admin.create(settingsOf(req.name, req.models, req.limits, req.budget));
        return create(CreateKeyResponseSchema, { key, info: keyInfo(info) });
      })(ctx),
    listKeys: (_req, ctx) => guarded(async () => create(ListKeysResponseSchema, { keys: (await admin.list()).map(keyInfo) }))(ctx),
    revokeKey: (req, ctx) => guarded(async () => create(RevokeKeyResponseSchema, { key: keyInfo(await admin.revoke(req.name)) }))(ctx),
    getUsage: (req, ctx) =>
      guarded(async () => {
        const usage = await admin.usage(req.name, periodKind(req.period), req.at ? timestampMs(req.at) : undefined);
        const t = usage.totals;
        return create(GetUsageResponseSchema, {
          name: usage.name,
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
    purgeCache: (req, ctx) => guarded(async () => create(PurgeCacheResponseSchema, { purged: BigInt(await cache.purge(req.alias, req.keyName)) }))(ctx),
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
  };
}
