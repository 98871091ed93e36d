import { builtInCatalog } from "./built-in-catalog.js";
import { type Capabilities, lookupModel } from "./model-catalog.js";

export type { Capabilities } from "./model-catalog.js";

/**
 * The built-in catalog's capabilities for a model id, or none: every field
 * unknown, every request admitted, as before capabilities existed. One
 * table serves prices and capabilities (catalog-data.ts).
 */
export function builtInCapabilities(model: string): Capabilities {
  return lookupModel(builtInCatalog(), model)?.capabilities ?? {};
}
