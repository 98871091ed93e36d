import { CATALOG_MODELS, CATALOG_VERSION } from "./catalog-data.js";
import { catalogFileSchema } from "./catalog-schema.js";
import { catalogOf, type ModelCatalog } from "./model-catalog.js";

let builtIn: ModelCatalog | undefined;

/** The catalog shipped with this version, checked against the same schema as an operator's file (once, on first use). */
export function builtInCatalog(): ModelCatalog {
  builtIn ??= catalogOf(catalogFileSchema.parse({ version: CATALOG_VERSION, models: CATALOG_MODELS }));
  return builtIn;
}
