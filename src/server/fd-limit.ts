import { readFileSync } from "node:fs";

/** The process's soft limit on open files, where the platform says (Linux); undefined elsewhere. */
export function openFileLimit(): number | undefined {
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((l) => l.startsWith("Max open files"));
    const soft = line?.split(/\s{2,}/)[1];
    return soft === undefined || soft === "unlimited" ? undefined : Number(soft);
  } catch {
    return undefined;
  }
}

/** Descriptors kept for everything that is not a client connection: listeners, logs, Redis, DNS. */
const RESERVED = 256;

/**
 * The connection ceiling that this process can actually hold. Each client
 * stream also holds an upstream connection, so half of what is left after
 * the reserve goes to clients. Without this, the ceiling sat above the file
 * limit and, once descriptors ran out, every new connection (health checks
 * included) was reset.
 */
export function effectiveMaxConnections(configured: number, limit = openFileLimit()): number {
  if (limit === undefined) return configured;
  return Math.max(16, Math.min(configured, Math.floor((limit - RESERVED) / 2)));
}

/**
 * How loud a lowered ceiling is said at start. A cut of at most a tenth is
 * the default 10,000 under the common 20,000-descriptor limit (9,872): every
 * start warned of it, and nobody could act on it. A larger cut means the
 * limit is far below what the ceiling asks for: a warning.
 */
export function loweredCeilingLevel(configured: number, effective: number): "warn" | "debug" {
  return effective < configured * 0.9 ? "warn" : "debug";
}
