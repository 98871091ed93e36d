import { z } from "zod";
import type { Config, KeyBudget, KeyLimits, TeamSettings } from "../config/config.js";
import type { McpGrant } from "../config/mcp-schema.js";
import { keyLimitsSchema, keyNameSchema } from "../config/schema.js";
import { quoteClientValue } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";
import { type LevelKind, MAX_LEVELS, type StoredLevel, type TenantStore } from "../store/tenant-store.js";
import { configHierarchy } from "./hierarchy.js";
import { budgetSchema, invalid, mcpGrantField, unknownMcpServer } from "./key-admin-schema.js";
import type { KeyRegistry } from "./key-registry.js";
import { newLevelId, withLevelId } from "./level-id.js";

/** A team or business line as the admin service shows it. */
export interface LevelInfo extends TeamSettings {
  readonly source: "config" | "runtime";
  readonly createdAt?: number;
}

/**
 * A change to a team or business line: an absent field is kept, `null`
 * clears it (no business line, no budget, no MCP grant; limits are
 * cleared with `{}`).
 */
export interface LevelPatch {
  readonly businessLine?: string | null;
  readonly limits?: KeyLimits;
  readonly budget?: KeyBudget | null;
  /** Replaces the level's MCP grant as a whole. */
  readonly mcp?: McpGrant | null;
}

/**
 * The admin service's teams and business lines (docs/tenancy.md, "Teams
 * and business lines"): created, changed and deleted at run time, shared
 * by every replica through the store. Configured ones are listed but
 * changed only in the configuration, and a name is never both.
 */
export interface LevelAdmin {
  /** Creates a level with a new id: one created again under a deleted level's name has none of its state. */
  create(kind: LevelKind, spec: Omit<TeamSettings, "id">): Promise<LevelInfo>;
  update(kind: LevelKind, name: string, patch: LevelPatch): Promise<LevelInfo>;
  remove(kind: LevelKind, name: string): Promise<LevelInfo>;
  list(kind: LevelKind): Promise<LevelInfo[]>;
}

const WORDS = { team: "team", business_line: "business line" } as const;

const levelSchema = z.strictObject({
  name: keyNameSchema,
  businessLine: keyNameSchema.optional(),
  limits: keyLimitsSchema,
  budget: budgetSchema.optional(),
  mcp: mcpGrantField,
});

export function createLevelAdmin(options: { readonly config: () => Config; readonly store: TenantStore; readonly registry: KeyRegistry }): LevelAdmin {
  const { store, registry } = options;
  const configured = (kind: LevelKind) => {
    const auth = options.config().auth;
    return kind === "team" ? auth.teams : auth.businessLines;
  };
  const runtimeInfo = (kind: LevelKind, level: StoredLevel): LevelInfo => ({ ...withLevelId(kind, level), source: "runtime" });

  /** A business line that exists now: configured, or runtime (re-read once when this replica has not seen it yet). */
  const requireLine = async (name: string) => {
    const hierarchy = configHierarchy(options.config(), registry);
    if (hierarchy.businessLine(name)) return;
    await registry.refresh();
    if (!hierarchy.businessLine(name)) throw new GatewayError("invalid_request", `businessLine: no business line is named ${quoteClientValue(name)}`, { field: "businessLine" });
  };

  const check = async (kind: LevelKind, spec: unknown) => {
    const parsed = levelSchema.safeParse(spec);
    if (!parsed.success) throw invalid(parsed.error.issues);
    const level = parsed.data;
    if (kind === "business_line" && level.businessLine !== undefined) throw new GatewayError("invalid_request", "businessLine: a business line belongs to no other", { field: "businessLine" });
    unknownMcpServer(level.mcp, options.config());
    if (level.businessLine !== undefined) await requireLine(level.businessLine);
    return level;
  };

  const runtimeName = (kind: LevelKind, name: string) => {
    if (!keyNameSchema.safeParse(name).success) throw new GatewayError("invalid_request", `name: not a ${WORDS[kind]} name`, { field: "name" });
    if (configured(kind).has(name)) throw new GatewayError("invalid_request", `${WORDS[kind]} ${name} is defined in the configuration: change it there (and reload)`, { field: "name" });
  };

  return {
    async create(kind, spec) {
      const level = await check(kind, spec);
      if (configured(kind).has(level.name)) throw new GatewayError("already_exists", `a configured ${WORDS[kind]} is named ${level.name}`, { field: "name" });
      const stored: StoredLevel = { ...level, id: newLevelId(), createdAt: Date.now() };
      const result = await store.putLevel(kind, stored, "create");
      if (result === "exists") throw new GatewayError("already_exists", `a ${WORDS[kind]} is named ${level.name}`, { field: "name" });
      if (result === "full") throw new GatewayError("invalid_request", `the gateway holds its maximum of ${MAX_LEVELS} runtime ${WORDS[kind]}s; delete one first`);
      await registry.refresh();
      return runtimeInfo(kind, stored);
    },

    async update(kind, name, patch) {
      runtimeName(kind, name);
      const current = (await store.listLevels(kind)).find((l) => l.name === name);
      if (!current) throw new GatewayError("not_found", `no runtime ${WORDS[kind]} is named ${quoteClientValue(name)}`, { field: "name" });
      // A level stored before ids keeps the id it has been read with since, from now on stored with it.
      const { createdAt, id, ...settings } = withLevelId(kind, current);
      const businessLine = patch.businessLine === undefined ? settings.businessLine : (patch.businessLine ?? undefined);
      const budget = patch.budget === undefined ? settings.budget : (patch.budget ?? undefined);
      const mcp = patch.mcp === undefined ? settings.mcp : (patch.mcp ?? undefined);
      const level = await check(kind, { name, limits: patch.limits ?? settings.limits, ...(businessLine === undefined ? {} : { businessLine }), ...(budget ? { budget } : {}), ...(mcp ? { mcp } : {}) });
      const stored: StoredLevel = { ...level, id, createdAt };
      if ((await store.putLevel(kind, stored, "update")) === "missing") throw new GatewayError("not_found", `no runtime ${WORDS[kind]} is named ${quoteClientValue(name)}`, { field: "name" });
      await registry.refresh();
      return runtimeInfo(kind, stored);
    },

    async remove(kind, name) {
      runtimeName(kind, name);
      // Members keep a level alive: a key whose team vanished would be refused (hierarchy.ts), a team whose line vanished too.
      const members =
        kind === "team"
          ? [...options.config().auth.keys, ...(await store.listKeys())].filter((k) => k.team === name).map((k) => `key ${k.name}`)
          : [...options.config().auth.teams.values(), ...(await store.listLevels("team"))].filter((t) => t.businessLine === name).map((t) => `team ${t.name}`);
      if (members.length > 0) {
        const shown = members.slice(0, 5).join(", ") + (members.length > 5 ? ` and ${members.length - 5} more` : "");
        throw new GatewayError("failed_precondition", `${WORDS[kind]} ${name} still has members (${shown}): move or remove them first`, { field: "name" });
      }
      const removed = await store.deleteLevel(kind, name);
      if (!removed) throw new GatewayError("not_found", `no runtime ${WORDS[kind]} is named ${quoteClientValue(name)}`, { field: "name" });
      await registry.refresh();
      return runtimeInfo(kind, removed);
    },

    async list(kind) {
      const runtime = (await store.listLevels(kind)).map((l) => runtimeInfo(kind, l)).sort((a, b) => a.name.localeCompare(b.name));
      return [...[...configured(kind).values()].map((l): LevelInfo => ({ ...l, source: "config" })), ...runtime];
    },
  };
}
