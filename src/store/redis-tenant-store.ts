import type { KeySettings } from "../config/config.js";
import { periodOf, ROLLUP_TTL_MS } from "../usage/periods.js";
import type { UsageRecord } from "../usage/usage-record.js";
import { SETTLED_MEMORY_MS } from "./memory-tenant-store.js";
import type { SluiceRedisClient } from "./redis-connection.js";
import { fieldsOf } from "./redis-replies.js";
import { redisScript } from "./redis-script.js";
import { ADMIT_SCRIPT, CREATE_KEY_SCRIPT, DELETE_LEVEL_SCRIPT, HEADROOM_SCRIPT, HEARTBEAT_SCRIPT, PUT_LEVEL_SCRIPT, RELEASE_SCRIPT, REVOKE_KEY_SCRIPT, SETTLE_SCRIPT, UPDATE_KEY_SCRIPT, USAGE_SCRIPT } from "./redis-scripts.js";
import {
  type AdmissionRef,
  type AdmitResult,
  type Headroom,
  type LevelKind,
  type LimitReason,
  MAX_LEVELS,
  MAX_RUNTIME_KEYS,
  type Quota,
  type SpendListener,
  STREAMS_RETRY_MS,
  type StoredKey,
  type StoredLevel,
  subjectOf,
  type TenantStore,
  type UsageTotals,
  WINDOW_MS,
} from "./tenant-store.js";

/** Every script the store runs; each call passes its keys (admit, settle and release one set per tenancy level). */
const SCRIPTS = {
  admit: redisScript(ADMIT_SCRIPT),
  settle: redisScript(SETTLE_SCRIPT),
  release: redisScript(RELEASE_SCRIPT),
  usage: redisScript(USAGE_SCRIPT),
  heartbeat: redisScript(HEARTBEAT_SCRIPT),
  headroom: redisScript(HEADROOM_SCRIPT),
  createKey: redisScript(CREATE_KEY_SCRIPT),
  revokeKey: redisScript(REVOKE_KEY_SCRIPT),
  updateKey: redisScript(UPDATE_KEY_SCRIPT),
  putLevel: redisScript(PUT_LEVEL_SCRIPT),
  deleteLevel: redisScript(DELETE_LEVEL_SCRIPT),
};

/** The store's connection is made in redis-connection.ts; exported here too, beside the store that needs it. */
export { createStoreClient, type SluiceRedisClient } from "./redis-connection.js";

export interface RedisTenantStoreOptions {
  readonly client: SluiceRedisClient;
  readonly prefix: string;
  readonly streamLeaseMs: number;
  readonly usageStreamMaxLen: number;
  /** Tests only: the scripts use this clock instead of Redis's TIME. */
  readonly now?: () => number;
  /** Told each level's spend after every settle that cost something. */
  readonly onSpend?: SpendListener;
}

const num = (value: unknown): number => Number(value ?? 0);

/** Leases that ran out released at most per admission or usage read: a few commands each, so a backlog never slows one admission much. */
const ADMIT_SWEEP = 20;
/** Leases that ran out released at most per heartbeat. */
const HEARTBEAT_SWEEP = 500;
/** Admissions renewed per heartbeat script. */
const HEARTBEAT_BATCH = 500;

function limitReason(reason: string): LimitReason {
  return reason === "requests" || reason === "tokens" || reason === "streams" ? reason : "budget";
}

/** The record as stream fields (all strings); empty optional fields are left out. */
function recordFields(r: UsageRecord): string[] {
  const fields: Array<[string, string | number | undefined]> = [
    ["id", r.id],
    ["requestId", r.requestId],
    ["key", r.key],
    ["keyId", r.keyId],
    ["team", r.team],
    ["teamId", r.teamId],
    ["businessLine", r.businessLine],
    ["businessLineId", r.businessLineId],
    ["tags", r.tags && Object.keys(r.tags).length > 0 ? JSON.stringify(r.tags) : undefined],
    ["alias", r.alias],
    ["target", r.target],
    ["inputTokens", r.inputTokens],
    ["outputTokens", r.outputTokens],
    ["cachedInputTokens", r.cachedInputTokens],
    ["cacheWrite5mTokens", r.cacheWrite5mTokens || undefined],
    ["cacheWrite1hTokens", r.cacheWrite1hTokens || undefined],
    ["reasoningTokens", r.reasoningTokens],
    ["webSearches", r.webSearches || undefined],
    ["billedRequests", r.billedRequests || undefined],
    ["costMicros", r.costMicros],
    ["costPicos", r.costPicos],
    ["estimated", r.estimated ? 1 : 0],
    ["ttftMs", r.ttftMs === undefined ? undefined : Math.round(r.ttftMs * 10) / 10],
    ["durationMs", Math.round(r.durationMs * 10) / 10],
    ["outcome", r.outcome],
    ["code", r.code],
    ["cache", r.cache],
    ["savedMicros", r.savedMicros],
    ["local", r.local ? 1 : undefined],
    ["context", r.context],
    ["pii", r.pii && Object.keys(r.pii).length > 0 ? JSON.stringify(r.pii) : undefined],
    ["kind", r.kind],
    ["toolServer", r.tool?.server],
    ["toolName", r.tool?.name],
    ["resultBytes", r.tool?.resultBytes],
    ["at", r.at],
    ["replica", r.replica],
  ];
  return fields.flatMap(([k, v]) => (v === undefined ? [] : [k, String(v)]));
}

/** A record's tags as stored (a JSON object of strings); anything else reads as none. */
export function parseTags(json: string): Readonly<Record<string, string>> {
  return entriesOf(json, (v): v is string => typeof v === "string");
}

/** A record's counts by detector as stored (a JSON object of numbers); anything else reads as none. */
export function parseCounts(json: string): Readonly<Record<string, number>> {
  return entriesOf(json, (v): v is number => typeof v === "number");
}

/** A JSON object's entries whose values pass `keep`; anything that is not a JSON object reads as none. */
function entriesOf<T>(json: string, keep: (value: unknown) => value is T): Readonly<Record<string, T>> {
  try {
    const value: unknown = JSON.parse(json);
    if (typeof value !== "object" || value === null || Array.isArray(value)) return {};
    return Object.fromEntries(Object.entries(value).filter((e): e is [string, T] => keep(e[1])));
  } catch {
    return {};
  }
}

/** A stream entry back into a record (GetUsage's neighbours and tests read them). */
export function parseRecord(fields: Record<string, string>): UsageRecord {
  return {
    ...(fields.id === undefined ? {} : { id: fields.id }),
    requestId: fields.requestId ?? "",
    key: fields.key ?? "",
    ...(fields.keyId === undefined ? {} : { keyId: fields.keyId }),
    ...(fields.team === undefined ? {} : { team: fields.team }),
    ...(fields.teamId === undefined ? {} : { teamId: fields.teamId }),
    ...(fields.businessLine === undefined ? {} : { businessLine: fields.businessLine }),
    ...(fields.businessLineId === undefined ? {} : { businessLineId: fields.businessLineId }),
    ...(fields.tags === undefined ? {} : { tags: parseTags(fields.tags) }),
    alias: fields.alias ?? "",
    target: fields.target ?? "",
    inputTokens: num(fields.inputTokens),
    outputTokens: num(fields.outputTokens),
    cachedInputTokens: num(fields.cachedInputTokens),
    ...(fields.cacheWrite5mTokens === undefined ? {} : { cacheWrite5mTokens: num(fields.cacheWrite5mTokens) }),
    ...(fields.cacheWrite1hTokens === undefined ? {} : { cacheWrite1hTokens: num(fields.cacheWrite1hTokens) }),
    reasoningTokens: num(fields.reasoningTokens),
    ...(fields.webSearches === undefined ? {} : { webSearches: num(fields.webSearches) }),
    ...(fields.billedRequests === undefined ? {} : { billedRequests: num(fields.billedRequests) }),
    costMicros: num(fields.costMicros),
    ...(fields.costPicos === undefined ? {} : { costPicos: num(fields.costPicos) }),
    estimated: fields.estimated === "1",
    ...(fields.ttftMs === undefined ? {} : { ttftMs: num(fields.ttftMs) }),
    durationMs: num(fields.durationMs),
    outcome: fields.outcome === "completed" || fields.outcome === "canceled" ? fields.outcome : "failed",
    ...(fields.code === undefined ? {} : { code: fields.code }),
    ...(fields.cache === "exact" || fields.cache === "semantic" ? { cache: fields.cache } : {}),
    ...(fields.savedMicros === undefined ? {} : { savedMicros: num(fields.savedMicros) }),
    ...(fields.local === "1" ? { local: true } : {}),
    ...(fields.context === undefined ? {} : { context: fields.context }),
    ...(fields.pii === undefined ? {} : { pii: parseCounts(fields.pii) }),
    ...(fields.kind === "tool" ? { kind: "tool" as const, tool: { server: fields.toolServer ?? "", name: fields.toolName ?? "", resultBytes: num(fields.resultBytes) } } : {}),
    at: num(fields.at),
    ...(fields.replica === undefined ? {} : { replica: fields.replica }),
  };
}

function parseKey(json: string): StoredKey {
  const k = JSON.parse(json) as StoredKey;
  return {
    name: k.name,
    sha256: k.sha256,
    createdAt: k.createdAt,
    ...(k.team === undefined ? {} : { team: k.team }),
    ...(k.models ? { models: k.models } : {}),
    limits: k.limits ?? {},
    ...(k.budget ? { budget: k.budget } : {}),
    ...(k.mcp ? { mcp: k.mcp } : {}),
  };
}

/** A runtime team or business line as stored: its settings, nothing else. */
function levelJson(level: StoredLevel): string {
  return JSON.stringify(level);
}

function parseLevel(json: string): StoredLevel {
  const l = JSON.parse(json) as StoredLevel;
  return {
    name: l.name,
    ...(typeof l.id === "string" ? { id: l.id } : {}),
    createdAt: l.createdAt,
    ...(l.businessLine === undefined ? {} : { businessLine: l.businessLine }),
    limits: l.limits ?? {},
    ...(l.budget ? { budget: l.budget } : {}),
    ...(l.mcp ? { mcp: l.mcp } : {}),
  };
}

/** What a runtime key stores: its settings and hash. Never the key. */
function keyJson(key: StoredKey): string {
  const settings: KeySettings & { sha256: string; createdAt: number } = {
    name: key.name,
    sha256: key.sha256,
    createdAt: key.createdAt,
    ...(key.team === undefined ? {} : { team: key.team }),
    ...(key.models ? { models: key.models } : {}),
    limits: key.limits,
    ...(key.budget ? { budget: key.budget } : {}),
    ...(key.mcp ? { mcp: key.mcp } : {}),
  };
  return JSON.stringify(settings);
}

/**
 * The tenant store in Redis, shared by every replica (docs/tenancy.md).
 * One script per admission and one per settle (redis-scripts.ts); the
 * key layout is documented there. Failures are thrown as they come: the
 * fail-open wrapper decides what Redis trouble means.
 */
export function createRedisTenantStore(options: RedisTenantStoreOptions): TenantStore {
  const { client, prefix } = options;
  const clockArg = () => (options.now ? String(options.now()) : "");
  const k = (name: string) => `{${name}}`;
  const usePrefix = (name: string) => `${prefix}use:${k(name)}:`;
  const keyTable = [`${prefix}keys`, `${prefix}keynames`, `${prefix}keys:version`];
  const leaseIndex = [`${prefix}leases`, `${prefix}leasel`];
  const levelTable = (kind: LevelKind) => `${prefix}${kind === "team" ? "teams" : "lines"}`;
  const windowKeys = (subject: string) => {
    const n = k(subject);
    return [`${prefix}req:${n}`, `${prefix}tok:${n}`, `${prefix}toka:${n}`, `${prefix}fly:${n}`, `${prefix}flya:${n}`];
  };

  return {
    async admit(req): Promise<AdmitResult> {
      const levels = [{ subject: req.key, limits: req.limits, budget: req.budget }, ...(req.parents ?? []).map((p) => ({ subject: subjectOf(p), limits: p.limits, budget: p.budget }))];
      const reply = (await SCRIPTS.admit(
        client,
        [keyTable[0]!, keyTable[2]!, ...leaseIndex, ...levels.flatMap((l) => windowKeys(l.subject))],
        [
          clockArg(),
          req.admissionId,
          String(WINDOW_MS),
          String(options.streamLeaseMs),
          req.runtimeSha256 ?? "",
          String(req.reserveTokens),
          String(req.reserveMicros),
          req.settingsVersion ?? "",
          String(ADMIT_SWEEP),
          ...levels.flatMap(({ subject, limits, budget }) => {
            const kind = budget?.period ?? "month";
            return [String(limits.requestsPerMinute ?? 0), String(limits.tokensPerMinute ?? 0), String(limits.concurrentStreams ?? 0), String(budget?.usdMicros ?? 0), kind, usePrefix(subject), String(ROLLUP_TTL_MS[kind])];
          }),
        ],
      )) as unknown[];
      const [status, nowMs, reason, retry, refusedAt, requests, requestsReset, tokens, tokensReset, streams, used, reserved, levelUsed, levelReserved] = reply.map((v, i) => (i === 0 || i === 2 ? String(v) : num(v)));
      const at = nowMs as number;
      if (status === "revoked" || status === "stale") return { ok: false, reason: status, quota: {} };
      const { requestsPerMinute: rpm, tokensPerMinute: tpm, concurrentStreams: maxStreams } = req.limits;
      const period = req.budget ? periodOf(req.budget.period, at) : undefined;
      const quota: Quota = {
        ...(rpm ? { requests: { limit: rpm, remaining: Math.max(0, rpm - (requests as number)), resetMs: requestsReset as number } } : {}),
        ...(tpm ? { tokens: { limit: tpm, remaining: Math.max(0, tpm - (tokens as number)), resetMs: tokensReset as number } } : {}),
        ...(maxStreams ? { streams: { limit: maxStreams, inUse: streams as number } } : {}),
        ...(req.budget && period ? { budget: { limitMicros: req.budget.usdMicros, usedMicros: used as number, reservedMicros: reserved as number, resetMs: period.endMs - at } } : {}),
      };
      if (status === "ok") return { ok: true, quota, admittedAt: at, shared: true };
      const parent = (refusedAt as number) > 1 ? req.parents?.[(refusedAt as number) - 2] : undefined;
      const refusedBudget = parent ? parent.budget : req.budget;
      const retryMs = retry as number;
      const retryAfterMs = retryMs > 0 ? retryMs : retryMs === 0 ? STREAMS_RETRY_MS : retryMs === -2 && refusedBudget ? periodOf(refusedBudget.period, at).endMs - at : undefined;
      const why = limitReason(reason as string);
      return {
        ok: false,
        reason: why,
        ...(parent ? { level: parent.level } : {}),
        quota,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        ...(why === "budget" ? { levelBudget: { usedMicros: levelUsed as number, reservedMicros: levelReserved as number } } : {}),
      };
    },

    async settle(s) {
      const r = s.record;
      const levels = [{ subject: s.key, reservedTokens: s.reservedTokens }, ...(s.parents ?? []).map((p) => ({ subject: subjectOf(p), reservedTokens: p.reservedTokens }))];
      const result = await SCRIPTS.settle(
        client,
        [`${prefix}done:${s.admissionId}`, `${prefix}usage`, ...leaseIndex, ...levels.flatMap((l) => windowKeys(l.subject))],
        [
          clockArg(),
          s.admissionId,
          String(WINDOW_MS),
          String(s.admittedAt),
          s.shared ? "1" : "0",
          String(options.usageStreamMaxLen),
          String(SETTLED_MEMORY_MS),
          String(r.inputTokens),
          String(r.outputTokens),
          String(r.cachedInputTokens),
          String(r.reasoningTokens),
          String(r.costMicros),
          r.estimated ? "1" : "0",
          String(ROLLUP_TTL_MS.day),
          String(ROLLUP_TTL_MS.week),
          String(ROLLUP_TTL_MS.month),
          ...levels.flatMap((l) => [String(l.reservedTokens), usePrefix(l.subject)]),
          ...recordFields(r),
        ],
      );
      if (!Array.isArray(result)) return "duplicate";
      const figures = (result as unknown[]).slice(1).map(num);
      if (options.onSpend && figures.length > 0 && figures[0] !== -1) {
        const spent = levels.map((_, i) => ({ day: figures[i * 3]!, week: figures[i * 3 + 1]!, month: figures[i * 3 + 2]! }));
        // A listener's trouble is its own: the settle is stored, and saying otherwise would have it sent again.
        try {
          options.onSpend(s, spent);
        } catch {
          // an alert lost, never the settle
        }
      }
      return "stored";
    },

    async release(a: AdmissionRef) {
      const subjects = [a.key, ...(a.parents ?? []).map(subjectOf)];
      await SCRIPTS.release(client, [...leaseIndex, ...subjects.flatMap(windowKeys)], [a.admissionId, ...subjects.map(usePrefix)]);
    },

    async heartbeat(ids) {
      // One script per batch: a replica's whole set of streams is renewed in a round trip or a few, never one per stream.
      for (let i = 0; i === 0 || i < ids.length; i += HEARTBEAT_BATCH) {
        await SCRIPTS.heartbeat(client, leaseIndex, [clockArg(), String(options.streamLeaseMs), String(HEARTBEAT_SWEEP), ...ids.slice(i, i + HEARTBEAT_BATCH)]);
      }
    },

    async usage(key, kind, atMs): Promise<UsageTotals> {
      const reply = (await SCRIPTS.usage(client, leaseIndex, [clockArg(), usePrefix(key), kind, atMs === undefined ? "" : String(atMs), String(ADMIT_SWEEP)])) as unknown[];
      const fields: Record<string, number> = {};
      for (let i = 1; i + 1 < reply.length; i += 2) fields[String(reply[i])] = num(reply[i + 1]);
      return {
        periodId: String(reply[0]),
        requests: fields.requests ?? 0,
        inputTokens: fields.input ?? 0,
        outputTokens: fields.output ?? 0,
        cachedInputTokens: fields.cached ?? 0,
        reasoningTokens: fields.reasoning ?? 0,
        spendMicros: fields.spend ?? 0,
        estimatedRequests: fields.estimated ?? 0,
        reservedMicros: fields.reserved ?? 0,
      };
    },

    async headroom(key, limits): Promise<Headroom> {
      const n = k(key);
      const reply = (await SCRIPTS.headroom(client, [`${prefix}req:${n}`, `${prefix}tok:${n}`, `${prefix}toka:${n}`, `${prefix}fly:${n}`], [clockArg(), String(WINDOW_MS)])) as unknown[];
      const [requests, tokens, streams] = reply.map(num) as [number, number, number];
      const { requestsPerMinute: rpm, tokensPerMinute: tpm } = limits;
      return {
        ...(rpm ? { requestsRemaining: Math.max(0, rpm - requests) } : {}),
        ...(tpm ? { tokensRemaining: Math.max(0, tpm - tokens) } : {}),
        streamsActive: streams,
      };
    },

    async records(count) {
      const entries = await client.xrevrange(`${prefix}usage`, "+", "-", "COUNT", count);
      return entries.reverse().map(([, fields]) => parseRecord(fieldsOf(fields)));
    },

    async createKey(key) {
      const result = await SCRIPTS.createKey(client, keyTable, [key.sha256, key.name, keyJson(key), String(MAX_RUNTIME_KEYS)]);
      return String(result) as "created" | "exists" | "full";
    },

    async revokeKey(name) {
      const json = String(await SCRIPTS.revokeKey(client, keyTable, [name]));
      return json === "" ? undefined : parseKey(json);
    },

    async listKeys() {
      return (await client.hvals(keyTable[0]!)).map((json) => parseKey(String(json)));
    },

    async updateKey(key) {
      return String(await SCRIPTS.updateKey(client, keyTable, [key.sha256, key.name, keyJson(key)])) as "updated" | "missing";
    },

    async putLevel(kind, level, mode) {
      return String(await SCRIPTS.putLevel(client, [levelTable(kind), keyTable[2]!], [level.name, levelJson(level), mode, String(MAX_LEVELS)])) as "created" | "updated" | "exists" | "missing" | "full";
    },

    async deleteLevel(kind, name) {
      const json = String(await SCRIPTS.deleteLevel(client, [levelTable(kind), keyTable[2]!], [name]));
      return json === "" ? undefined : parseLevel(json);
    },

    async listLevels(kind) {
      return (await client.hvals(levelTable(kind))).map((json) => parseLevel(String(json)));
    },

    async keysVersion() {
      return String((await client.get(keyTable[2]!)) ?? "0");
    },

    async close() {
      // The connection belongs to whoever created it (tenancy.ts closes it after the last settle).
    },
  };
}
