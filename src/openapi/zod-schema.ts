import { type ZodType, z } from "zod";
import type { Components, JsonSchema } from "./json-schema.js";
import { schemaRef } from "./json-schema.js";

/** Rewrites the `$ref`s zod writes against its own root (`#`, `#/$defs/x`) to components of the document. */
function rebased(value: unknown, name: string): unknown {
  if (Array.isArray(value)) return value.map((item) => rebased(item, name));
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key === "$ref" && typeof inner === "string") out[key] = inner === "#" ? `#/components/schemas/${name}` : inner.replace(/^#\/\$defs\//, `#/components/schemas/${name}.`);
    else out[key] = rebased(inner, name);
  }
  return out;
}

/**
 * The JSON Schema of a body an edge parses with zod, from that very
 * schema (what is documented is what is checked), as a named component.
 * Input side: defaults and optional fields as a client may send them;
 * refinements zod cannot express in JSON Schema are left out (`{}`).
 */
export function zodBodySchema(name: string, schema: ZodType, components: Components): JsonSchema {
  if (!components.has(name)) {
    const { $schema: _dialect, $defs, ...root } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any", target: "draft-2020-12" }) as Record<string, unknown>;
    for (const [def, inner] of Object.entries(($defs ?? {}) as Record<string, unknown>)) components.set(`${name}.${def}`, rebased(inner, name) as JsonSchema);
    components.set(name, rebased(root, name) as JsonSchema);
  }
  return schemaRef(name);
}
