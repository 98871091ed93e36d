import type { Config } from "./config.js";
import { sha256Hex } from "./key-hash.js";
import { configSchema } from "./schema.js";
import type { Secret } from "./secret.js";
import { reloadMarks } from "./setting-meta.js";

/**
 * Which settings a reload applies is marked on each setting's schema node
 * (`reload: "restart"` or `"live"`, see setting-meta.ts); this reads the
 * marks. A restart-only setting was taken by what the process built at start
 * (the listener's socket, TLS context, guards and limits; the store, cache,
 * ledger, batch worker, telemetry, console, alert sender), so a changed one
 * is kept as it was and named in a warning instead of being silently ignored.
 */
const marks = reloadMarks(configSchema);

/** The settings a reload applies without a restart, for the configuration reference and the completeness test. */
export const LIVE_SETTINGS: readonly string[] = marks.filter((m) => m.reload === "live").map((m) => m.path);

export const RESTART_ONLY_SETTINGS: readonly string[] = marks.filter((m) => m.reload === "restart").map((m) => m.path);

/**
 * Restart-only settings whose running value is not the resolved
 * configuration's value at the same path. Every other one is compared as
 * `Config` holds it at its path, secrets by their hash (a rotated TLS key or
 * webhook secret is a change too; files are read again on reload).
 */
const RUNNING_VALUE: Readonly<Record<string, (config: Config) => unknown>> = {
  // Only turning the admin service on or off waits; its key is read per request, so a new one applies at once.
  "auth.adminKeyEnv": (c) => c.auth.adminKeySha256 !== undefined,
  // Reaches the listener as limits.maxRequestBytes, which is named instead.
  "facade.maxBodyBytes": () => undefined,
};

function isSecret(value: unknown): value is Secret {
  return typeof value === "object" && value !== null && typeof (value as Partial<Secret>).reveal === "function";
}

function valueAt(config: Config, path: string): unknown {
  return path.split(".").reduce<unknown>((node, key) => (typeof node === "object" && node !== null ? (node as Record<string, unknown>)[key] : undefined), config);
}

function comparable(value: unknown): string | undefined {
  return JSON.stringify(value, function (this: Record<string, unknown>, key: string, written: unknown) {
    const raw = this[key];
    return isSecret(raw) ? sha256Hex(raw.reveal()) : written;
  });
}

function running(config: Config, path: string): unknown {
  const read = RUNNING_VALUE[path];
  return read ? read(config) : comparable(valueAt(config, path));
}

/** The restart-only settings that differ between two configurations, by path. */
export function restartOnlyChanges(previous: Config, next: Config): string[] {
  return RESTART_ONLY_SETTINGS.filter((path) => running(previous, path) !== running(next, path));
}
