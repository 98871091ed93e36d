/**
 * Gemini's `Schema` (an OpenAPI 3.0 subset: `type: "OBJECT"`, `nullable`,
 * `propertyOrdering`) as the JSON Schema every other provider and the
 * canonical request take. Types are lower-cased, `nullable` becomes a
 * `"null"` type, Gemini-only keywords go. Iterative over a bounded depth
 * (the canonical checks refuse deeper schemas anyway).
 */
export function jsonSchemaFromOpenApi(schema: unknown, depth = 0): unknown {
  if (depth > 64 || schema === null || typeof schema !== "object") return schema;
  if (Array.isArray(schema)) return schema.map((item) => jsonSchemaFromOpenApi(item, depth + 1));
  const out: Record<string, unknown> = {};
  const source = schema as Record<string, unknown>;
  for (const [key, value] of Object.entries(source)) {
    if (key === "propertyOrdering" || key === "nullable") continue;
    if (key === "type" && typeof value === "string") out.type = value.toLowerCase();
    else if (key === "properties" && value !== null && typeof value === "object" && !Array.isArray(value)) {
      out.properties = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, jsonSchemaFromOpenApi(sub, depth + 1)]));
    } else if (key === "items" || key === "anyOf" || key === "additionalProperties") out[key] = jsonSchemaFromOpenApi(value, depth + 1);
    else out[key] = value;
  }
  if (source.nullable === true && typeof out.type === "string") out.type = [out.type, "null"];
  return out;
}
