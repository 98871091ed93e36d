/**
 * The little of JSON Schema (draft 2020-12, OpenAPI 3.1's dialect) this
 * folder writes: plain objects, so a document is JSON as it is built.
 */
export type JsonSchema = { readonly [keyword: string]: unknown };

/** Where a named schema lives in the document: `#/components/schemas/<name>`. */
export function schemaRef(name: string): JsonSchema {
  return { $ref: `#/components/schemas/${name}` };
}

/** Named schemas, collected as the document is built (each written once, recursion through `$ref`). */
export type Components = Map<string, JsonSchema>;
