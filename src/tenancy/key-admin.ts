import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { BudgetPeriod, Config, KeySettings } from "../config/config.js";
import { sha256Hex } from "../config/key-hash.js";
import { KEY_BOUNDS, keyLimitsSchema, keyNameSchema } from "../config/schema.js";
import { quoteClientValue } from "../core/client-text.js";
import { GatewayError } from "../core/errors.js";
import { MAX_RUNTIME_KEYS, type TenantStore, type UsageTotals } from "../store/tenant-store.js";
import { type Period, periodFromId, periodOf } from "../usage/periods.js";
import { AuthError, bearerToken, sameDigest } from "./authenticate.js";
import type { KeyRegistry } from "./key-registry.js";
import { keyId } from "./principal.js";

/** A key as the admin service shows it: settings and an id, never the key or its whole hash. */
export interface KeyInfo extends KeySettings {
  readonly source: "config" | "runtime";
  readonly id: string;
  readonly createdAt?: number;
}

export interface KeyUsage {
  readonly name: string;
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
  list(): Promise<KeyInfo[]>;
  revoke(name: string): Promise<KeyInfo>;
  usage(name: string, kind: BudgetPeriod | undefined, atMs?: number): Promise<KeyUsage>;
}

/** What CreateKey accepts, with the configuration's own bounds. */
const createSchema = z.strictObject({
  name: keyNameSchema,
  models: z.array(z.string().min(1).max(256)).max(KEY_BOUNDS.maxModels).optional(),
  limits: keyLimitsSchema,
  budget: z
    .strictObject({
      usdMicros: z.number().int().positive().max(KEY_BOUNDS.maxBudgetUsd * 1_000_000),
      period: z.enum(["day", "week", "month"]),
    })
    .optional(),
});

/** A new virtual key: 256 random bits, recognisable by its prefix (secret scanners look for such prefixes). */
function newKey(): string {
  return `sk-sluice-${randomBytes(32).toString("base64url")}`;
}

function invalid(issues: readonly z.core.$ZodIssue[]): GatewayError {
  const issue = issues[0]!;
  const field = issue.path.map(String).join(".") || "request";
  return new GatewayError("invalid_request", `${field}: ${issue.message}`, { field });
}

export function createKeyAdmin(options: { readonly config: () => Config; readonly store: TenantStore; readonly registry: KeyRegistry }): KeyAdmin {
  const { store, registry } = options;
  const configured = (): KeyInfo[] =>
    options.config().auth.keys.map(({ sha256, ...settings }) => ({ ...settings, source: "config", id: keyId(sha256) }));

  return {
    authorize(header) {
      const expected = options.config().auth.adminKeySha256;
      const presented = sha256Hex(bearerToken(header));
      if (expected === undefined || !sameDigest(expected, presented)) throw new AuthError("unknown");
    },

    async create(spec) {
      const parsed = createSchema.safeParse(spec);
      if (!parsed.success) throw invalid(parsed.error.issues);
      const { name, models, limits, budget } = parsed.data;
      const config = options.config();
      const unknown = models?.find((alias) => !config.models.has(alias));
      if (unknown !== undefined) throw new GatewayError("invalid_request", `models: unknown model alias ${quoteClientValue(unknown)}`, { field: "models" });
      if (config.auth.keys.some((k) => k.name === name)) throw new GatewayError("already_exists", `a configured key is named ${name}`, { field: "name" });
      const key = newKey();
      const stored = {
        name,
        sha256: sha256Hex(key),
        createdAt: Date.now(),
        limits,
        ...(models && models.length > 0 ? { models } : {}),
        ...(budget ? { budget } : {}),
      };
      const result = await store.createKey(stored);
      if (result === "exists") throw new GatewayError("already_exists", `a key is named ${name}`, { field: "name" });
      if (result === "full") throw new GatewayError("invalid_request", `the gateway holds its maximum of ${MAX_RUNTIME_KEYS} runtime keys; revoke one first`);
      await registry.refresh();
      const { sha256, ...settings } = stored;
      return { key, info: { ...settings, source: "runtime", id: keyId(sha256) } };
    },

    async list() {
      const runtime = (await store.listKeys())
        .map(({ sha256, ...settings }): KeyInfo => ({ ...settings, source: "runtime", id: keyId(sha256) }))
        .sort((a, b) => a.name.localeCompare(b.name));
      return [...configured(), ...runtime];
    },

    async revoke(name) {
      if (!keyNameSchema.safeParse(name).success) throw new GatewayError("invalid_request", "name: not a key name", { field: "name" });
      if (options.config().auth.keys.some((k) => k.name === name)) {
        throw new GatewayError("invalid_request", `key ${name} is defined in the configuration: remove it there (and reload)`, { field: "name" });
      }
      const removed = await store.revokeKey(name);
      if (!removed) throw new GatewayError("not_found", `no runtime key is named ${quoteClientValue(name)}`, { field: "name" });
      await registry.refresh();
      const { sha256, ...settings } = removed;
      return { ...settings, source: "runtime", id: keyId(sha256) };
    },

    async usage(name, kind, atMs) {
      if (!keyNameSchema.safeParse(name).success) throw new GatewayError("invalid_request", "name: not a key name", { field: "name" });
      const budget = options.config().auth.keys.find((k) => k.name === name)?.budget ?? registry.all().find((k) => k.name === name)?.budget;
      const periodKind = kind ?? budget?.period ?? "month";
      const totals = await store.usage(name, periodKind, atMs);
      return {
        name,
        // The store's calendar (Redis's clock) decides which period "now" is.
        period: periodFromId(periodKind, totals.periodId) ?? periodOf(periodKind, atMs ?? Date.now()),
        totals,
        ...(budget && budget.period === periodKind ? { budgetMicros: budget.usdMicros } : {}),
      };
    },
  };
}
