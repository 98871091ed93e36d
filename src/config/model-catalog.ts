import type { z } from "zod";
import type { capabilitiesSchema } from "./capabilities-schema.js";
import type { CatalogEntry, CatalogFile } from "./catalog-schema.js";
import { normalizeModelId } from "./model-id.js";

/** What a target can do; an unset field is unknown, and unknown is taken as able. */
export type Capabilities = Readonly<z.output<typeof capabilitiesSchema>>;

/** The catalog in force: the built-in entries with the operator's over them, and where each came from. */
export interface ModelCatalog {
  /** The built-in catalog's version, and the operator file's when there is one (`2026-12-07+ops-3`). */
  readonly version: string;
  readonly entries: ReadonlyMap<string, CatalogEntry>;
  /** Ids the operator's file set (replaced or added). */
  readonly fromFile: ReadonlySet<string>;
}

/** A catalog from its file form, `over` another: an entry of the same id replaces the one below. */
export function catalogOf(file: CatalogFile, over?: ModelCatalog): ModelCatalog {
  const entries = new Map(over?.entries);
  for (const entry of file.models) entries.set(entry.id, entry);
  return {
    version: over ? `${over.version}+${file.version}` : file.version,
    entries,
    fromFile: over ? new Set(file.models.map((e) => e.id)) : new Set(),
  };
}

/**
 * The entry a target is: the one its `catalog:` names, else the one whose
 * id is the longest prefix of its normalised model id ending where the id
 * ends or at a `-` (so `gpt-4o` serves `gpt-4o-2024-08-06` but not
 * `gpt-4o-mini`, which has its own entry, and `gpt-5` does not serve
 * `gpt-5.1`). Entries marked `explicit` are only found by name.
 */
export function lookupModel(catalog: ModelCatalog, model: string, explicit?: string): CatalogEntry | undefined {
  if (explicit !== undefined) return catalog.entries.get(explicit);
  const id = normalizeModelId(model);
  let best: CatalogEntry | undefined;
  for (const entry of catalog.entries.values()) {
    if (entry.match !== "name" || !id.startsWith(entry.id)) continue;
    if (id.length > entry.id.length && id[entry.id.length] !== "-") continue;
    if (!best || entry.id.length > best.id.length) best = entry;
  }
  return best;
}
