import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { BudgetPeriod, Config, KeyBudget, KeyLimits, KeySettings } from "../config/config.js";
import { sha256Hex } from "../config/key-hash.js";
import type { McpGrant } from "../config/mcp-schema.js";
import { KEY_BOUNDS, keyLimitsSchema, keyNameSchema } from "../config/schema.js";
import { quoteClientValue } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";
import { MAX_RUNTIME_KEYS, type StoredKey, subjectOf, type TenantStore, type UsageTotals } from "../store/tenant-store.js";
import { type Period, periodFromId, periodOf } from "../usage/periods.js";
import { authError, bearerToken, sameDigest } from "./authenticate.js";
import { configHierarchy } from "./hierarchy.js";
import { budgetSchema, invalid, mcpGrantField, unknownMcpServer } from "./key-admin-schema.js";
import type { KeyRegistry } from "./key-registry.js";
import { createLevelAdmin, type LevelAdmin } from "./level-admin.js";
import { keyId } from "./principal.js";

/** A key as the admin service shows it: settings and an id, never the key or its whole hash. */
export interface KeyInfo extends KeySettings {
  readonly source: "config" | "runtime";
  readonly id: string;
  readonly createdAt?: number;
}

export interface KeyUsage {
  /** The key's name; empty for the id of a key that no longer exists. */
  readonly name: string;
  readonly id: string;
  readonly period: Period;
  readonly totals: UsageTotals;
  /** The key's budget, when it has one for this period kind. */
  readonly budgetMicros?: number;
}

/**
 * The admin service's work, independent of the wire: create, list and
 * revoke runtime keys, read usage. Runtime keys are checked exactly like
 * configured ones (same name rules, same bounds, aliases that exist now).
 */
export interface KeyAdmin {
  /** Throws `unauthenticated` unless `header` carries the admin key of the configuration in force. */
  authorize(header: string | undefined): void;
  create(spec: KeySettings): Promise<{ readonly key: string; readonly info: KeyInfo }>;
  /** Changes a runtime key's settings; its key and hash stay. */
  update(name: string, patch: KeyPatch): Promise<KeyInfo>;
  list(): Promise<KeyInfo[]>;
  revoke(name: string): Promise<KeyInfo>;
  /** A key's usage: `{ name }` of a key that exists now, or `{ id }` of any key, revoked ones included. */
  usage(who: { readonly name: string } | { readonly id: string }, kind: BudgetPeriod | undefined, atMs?: number): Promise<KeyUsage>;
  /** Teams and business lines. */
  readonly levels: LevelAdmin;
}

/** A change to a runtime key: an absent field is kept, `null` clears it (every alias, no budget, no team, no MCP grant of its own; limits are cleared with `{}`). */
export interface KeyPatch {
  readonly models?: readonly string[] | null;
  readonly limits?: KeyLimits;
  readonly budget?: KeyBudget | null;
  readonly team?: string | null;
  /** Replaces the key's MCP grant as a whole. */
  readonly mcp?: McpGrant | null;
}

/** What CreateKey accepts, with the configuration's own bounds. */
const createSchema = z.strictObject({
  name: keyNameSchema,
  team: keyNameSchema.optional(),
  models: z.array(z.string().min(1).max(256)).max(KEY_BOUNDS.maxModels).optional(),
  limits: keyLimitsSchema,
  budget: budgetSchema.optional(),
  mcp: mcpGrantField,
});

/** A new virtual key: 256 random bits, recognisable by its prefix (secret scanners look for such prefixes). */
function newKey(): string {
  return `sk-sluice-${randomBytes(32).toString("base64url")}`;
}

export function createKeyAdmin(options: { readonly config: () => Config; readonly store: TenantStore; readonly registry: KeyRegistry }): KeyAdmin {
  const { store, registry } = options;
  const runtimeInfo = ({ sha256, ...settings }: StoredKey): KeyInfo => ({ ...settings, source: "runtime", id: keyId(sha256) });

  /** Checks a key's settings as the configuration would: bounds, aliases that exist, a team that exists (re-read once when this replica has not seen it yet). */
  const check = async (spec: unknown) => {
    const parsed = createSchema.safeParse(spec);
    if (!parsed.success) throw invalid(parsed.error.issues);
    const settings = parsed.data;
    const config = options.config();
    const unknown = settings.models?.find((alias) => !config.models.has(alias));
    if (unknown !== undefined) throw new GatewayError("invalid_request", `models: unknown model alias ${quoteClientValue(unknown)}`, { field: "models" });
    unknownMcpServer(settings.mcp, config);
    if (settings.team !== undefined) {
      const hierarchy = configHierarchy(config, registry);
      if (!hierarchy.team(settings.team)) await registry.refresh();
      if (!hierarchy.team(settings.team)) throw new GatewayError("invalid_request", `team: no team is named ${quoteClientValue(settings.team)}`, { field: "team" });
    }
    return settings;
  };

  const runtimeName = (name: string, instead: string) => {
    if (!keyNameSchema.safeParse(name).success) throw new GatewayError("invalid_request", "name: not a key name", { field: "name" });
    if (options.config().auth.keys.some((k) => k.name === name)) {
      throw new GatewayError("invalid_request", `key ${name} is defined in the configuration: ${instead} (and reload)`, { field: "name" });
    }
  };

  const configured = (): KeyInfo[] => options.config().auth.keys.map(({ sha256, ...settings }) => ({ ...settings, source: "config", id: keyId(sha256) }));

  return {
    levels: createLevelAdmin(options),
    authorize(header) {
      const expected = options.config().auth.adminKeySha256;
      const presented = sha256Hex(bearerToken(header));
      if (expected === undefined || !sameDigest(expected, presented)) throw authError("unknown");
    },

    async create(spec) {
      const { name, team, models, limits, budget, mcp } = await check(spec);
      if (options.config().auth.keys.some((k) => k.name === name)) throw new GatewayError("already_exists", `a configured key is named ${name}`, { field: "name" });
      // Ids are 48 bits of the key's hash: a new key whose id another known key has is minted again, so no two keys ever share one.
      const taken = new Set([...options.config().auth.keys.map((k) => keyId(k.sha256)), ...registry.all().map((k) => k.id)]);
      let key = newKey();
      while (taken.has(keyId(sha256Hex(key)))) key = newKey();
      const stored: StoredKey = {
        name,
        sha256: sha256Hex(key),
        createdAt: Date.now(),
        ...(team === undefined ? {} : { team }),
        limits,
        ...(models && models.length > 0 ? { models } : {}),
        ...(budget ? { budget } : {}),
        ...(mcp ? { mcp } : {}),
      };
      const result = await store.createKey(stored);
      if (result === "exists") throw new GatewayError("already_exists", `a key is named ${name}`, { field: "name" });
      if (result === "full") throw new GatewayError("invalid_request", `the gateway holds its maximum of ${MAX_RUNTIME_KEYS} runtime keys; revoke one first`);
      await registry.refresh();
      return { key, info: runtimeInfo(stored) };
    },

    async update(name, patch) {
      runtimeName(name, "change it there");
      const current = (await store.listKeys()).find((k) => k.name === name);
      if (!current) throw new GatewayError("not_found", `no runtime key is named ${quoteClientValue(name)}`, { field: "name" });
      const pick = <T>(change: T | null | undefined, kept: T | undefined) => (change === undefined ? kept : (change ?? undefined));
      const team = pick(patch.team, current.team);
      const models = pick(patch.models, current.models);
      const budget = pick(patch.budget, current.budget);
      const mcp = pick(patch.mcp, current.mcp);
      const settings = await check({
        name,
        limits: patch.limits ?? current.limits,
        ...(team === undefined ? {} : { team }),
        ...(models === undefined ? {} : { models: [...models] }),
        ...(budget === undefined ? {} : { budget }),
        ...(mcp === undefined ? {} : { mcp }),
      });
      const stored: StoredKey = {
        name,
        sha256: current.sha256,
        createdAt: current.createdAt,
        ...(settings.team === undefined ? {} : { team: settings.team }),
        limits: settings.limits,
        ...(settings.models && settings.models.length > 0 ? { models: settings.models } : {}),
        ...(settings.budget ? { budget: settings.budget } : {}),
        ...(settings.mcp ? { mcp: settings.mcp } : {}),
      };
      if ((await store.updateKey(stored)) === "missing") throw new GatewayError("not_found", `no runtime key is named ${quoteClientValue(name)}`, { field: "name" });
      await registry.refresh();
      return runtimeInfo(stored);
    },

    async list() {
      const runtime = (await store.listKeys()).map(runtimeInfo).sort((a, b) => a.name.localeCompare(b.name));
      return [...configured(), ...runtime];
    },

    async revoke(name) {
      runtimeName(name, "remove it there");
      const removed = await store.revokeKey(name);
      if (!removed) throw new GatewayError("not_found", `no runtime key is named ${quoteClientValue(name)}`, { field: "name" });
      await registry.refresh();
      return runtimeInfo(removed);
    },

    async usage(who, kind, atMs) {
      // A key that exists now, by name or id; usage is kept by id, so a revoked key's stays its own and is never a new key's of its name.
      const find = (key: { readonly name: string; readonly sha256: string }) => ("id" in who ? keyId(key.sha256) === who.id : key.name === who.name);
      if ("id" in who) {
        if (!/^[0-9a-f]{12}$/.test(who.id)) throw new GatewayError("invalid_request", "id: not a key id (12 hex digits)", { field: "id" });
      } else if (!keyNameSchema.safeParse(who.name).success) throw new GatewayError("invalid_request", "name: not a key name", { field: "name" });
      let key: { readonly name: string; readonly sha256: string; readonly budget?: KeyBudget } | undefined = options.config().auth.keys.find(find) ?? registry.all().find(find);
      if (!key) {
        await registry.refresh();
        key = registry.all().find(find);
      }
      if (!key && !("id" in who)) throw new GatewayError("not_found", `no key is named ${quoteClientValue(who.name)} (a revoked key's usage is read by its id)`, { field: "name" });
      const id = "id" in who ? who.id : keyId(key!.sha256);
      const budget = key?.budget;
      const periodKind = kind ?? budget?.period ?? "month";
      const totals = await store.usage(subjectOf({ level: "key", id }), periodKind, atMs);
      return {
        name: key?.name ?? "",
        id,
        // The store's calendar (Redis's clock) decides which period "now" is.
        period: periodFromId(periodKind, totals.periodId) ?? periodOf(periodKind, atMs ?? Date.now()),
        totals,
        ...(budget && budget.period === periodKind ? { budgetMicros: budget.usdMicros } : {}),
      };
    },
  };
}
