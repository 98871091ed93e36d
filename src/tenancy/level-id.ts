import { createHash, randomUUID } from "node:crypto";
import type { TeamSettings } from "../config/config.js";
import type { LevelKind, StoredLevel } from "../store/tenant-store.js";

/** A new runtime team's or business line's id: random, so a level created again under an old name is a new level. */
export function newLevelId(): string {
  return randomUUID();
}

/**
 * A runtime level with its id. One stored before levels had ids gets one
 * derived from what it was created as (kind, name and creation time), the
 * same on every replica and at every read, and different for a level
 * created again under its name.
 */
export function withLevelId(kind: LevelKind, level: StoredLevel): TeamSettings & { readonly createdAt: number } {
  return { ...level, id: level.id ?? createHash("sha256").update(`${kind}\0${level.name}\0${level.createdAt}`).digest("hex").slice(0, 32) };
}
