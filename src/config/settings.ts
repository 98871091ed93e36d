import type { z } from "zod";
import type { contextSchema } from "./capabilities-schema.js";
import type { PII_MODES, piiPolicySchema } from "./compliance-schema.js";
import type { BUDGET_PERIODS, CACHE_SCOPES, CONSOLE_ACCESS, ConfigFile, keyLimitsSchema, priceSchema, STRATEGIES } from "./schema.js";

// The configuration's sections as a room takes them: the schema's output
// (so each setting is declared once, on its zod node), or that output with a
// default decided from another setting, which buildConfig (config.ts) does
// and says. A room that needs only its section imports it from here, not
// from the resolver.

/** config.responses: stored responses (docs/responses.md). */
export type ResponsesSettings = ConfigFile["responses"];

/** config.resume: detach grace, retention and backlog bounds of resumable streams (docs/streams.md, "Resumable streams"). */
export type ResumeSettings = ConfigFile["resume"];

export type BreakerConfig = ConfigFile["providers"][string]["breaker"];

/** What Sluice reports, and where: Prometheus metrics and OpenTelemetry traces. */
export type TelemetryConfig = ConfigFile["telemetry"];

/** USD per million tokens (and per hosted web search, Usage.webSearches). */
export type Price = z.output<typeof priceSchema>;

/** Shadow traffic: a sampled share of an alias's completed calls mirrored to a candidate alias and compared. */
export type ShadowSettings = NonNullable<ConfigFile["models"][string]["shadow"]>;

/** store.postgres: a server by URL, or the embedded PGlite (in memory, or in a directory). */
export type PostgresStoreConfig = NonNullable<NonNullable<ConfigFile["store"]>["postgres"]>;

export type CacheScope = (typeof CACHE_SCOPES)[number];

/** config.cache: what every alias's cache shares. */
export type CacheSettings = ConfigFile["cache"];

export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** A PII policy as written on a key, team or alias: the strictest of a request's applies (compliance/pii-policy.ts). */
export type PiiPolicy = z.output<typeof piiPolicySchema>;

export type PiiMode = (typeof PII_MODES)[number];

/** A detector of the operator's own, from compliance.patterns. */
export type CustomPattern = ConfigFile["compliance"]["patterns"][number];

/** compliance.audit with `enabled` decided: as written, else on when store.postgres is configured. */
export type AuditSettings = Omit<ConfigFile["compliance"]["audit"], "enabled"> & { readonly enabled: boolean };

/** models.<alias>.context. */
export type ContextSettings = z.output<typeof contextSchema>;

/** A key's or level's rate limits; an absent limit is not enforced. */
export type KeyLimits = z.output<typeof keyLimitsSchema>;

/** The spend ledger (docs/tenancy.md, "The spend ledger"), with `enabled` decided: as written, else on when store.postgres is configured. */
export type LedgerSettings = Omit<ConfigFile["ledger"], "enabled"> & { readonly enabled: boolean };

/** The OpenAI Batch API on the facade (docs/batches.md). */
export type BatchSettings = ConfigFile["batch"];

/** The worker pool for heavy per-request work (config/workers-schema.ts). */
export type WorkersSettings = ConfigFile["workers"];

/** Shared state in Redis (docs/tenancy.md). */
export type RedisStoreConfig = NonNullable<NonNullable<ConfigFile["store"]>["redis"]>;

export type ConsoleAccess = (typeof CONSOLE_ACCESS)[number];

/** The operators' console (/console) and its data feed (WatchStats), with `access` decided: as written, else `admin` with an admin key and `off` without. */
export type ConsoleConfig = Omit<ConfigFile["console"], "access"> & { readonly access: ConsoleAccess };

export type Strategy = (typeof STRATEGIES)[number];
