import { z } from "zod";
import { capabilitiesSchema } from "./capabilities-schema.js";
import { priceSchema } from "./price-schema.js";

/** The most an operator's catalog file may weigh: it is read at start and at each reload. */
export const MAX_CATALOG_FILE_BYTES = 1_048_576;

/** A catalog entry's id: lower case, as normalised model ids are (model-id.ts), with `/` for a cloud's own entry. */
export const catalogRefSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[a-z0-9][a-z0-9._:/-]*$/, "a catalog entry id: lower-case letters, digits and . _ : / -");

/** `catalog` in the configuration: where the operator's entries come from. */
export const catalogSettingsSchema = z
  .strictObject({
    file: z
      .string()
      .min(1)
      .optional()
      .meta({
        description: `A YAML or JSON file of catalog entries (at most ${MAX_CATALOG_FILE_BYTES} bytes) that replace built-in entries of the same id or add new ones; read at start and at each reload. A relative path is taken from the working directory.`,
        unset: "the built-in catalog only",
      }),
  })
  .prefault({});

/**
 * One model as the catalog knows it. `match: "name"` entries are found by
 * a target's model id (the longest id that prefixes it at a `-` wins);
 * `match: "explicit"` entries only by a target's `catalog:` (a price one
 * cloud charges for an open model must not price the same model served
 * anywhere else).
 */
export const catalogEntrySchema = z.strictObject({
  id: catalogRefSchema,
  provider: z.string().min(1).max(64),
  match: z.enum(["name", "explicit"]).default("name"),
  kind: z.enum(["chat", "embedding"]).default("chat"),
  price: priceSchema.optional(),
  capabilities: capabilitiesSchema.optional(),
  source: z.url().max(500).optional(),
  checked: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, "a date, YYYY-MM-DD")
    .optional(),
  note: z.string().max(500).optional(),
});

/** A catalog as a file holds it: the built-in data file, or an operator's override. */
export const catalogFileSchema = z.strictObject({
  version: z.string().min(1).max(64),
  models: z.array(catalogEntrySchema).max(5_000),
});

export type CatalogEntry = z.output<typeof catalogEntrySchema>;
export type CatalogFile = z.output<typeof catalogFileSchema>;
export type CatalogEntryInput = z.input<typeof catalogEntrySchema>;
