import { createRandom } from "./random.js";
import { simulatedTokens } from "./text.js";

type Schema = Record<string, unknown>;

function resolve(schema: Schema, root: Schema): Schema {
  const ref = schema.$ref;
  if (typeof ref !== "string" || !ref.startsWith("#/")) return schema;
  let node: unknown = root;
  for (const key of ref.slice(2).split("/")) node = (node as Record<string, unknown> | undefined)?.[key];
  return node !== null && typeof node === "object" ? (node as Schema) : {};
}

function typeOf(schema: Schema): string | undefined {
  const type = schema.type;
  // Lower case: Gemini's OpenAPI-style schemas write types as STRING, OBJECT.
  if (typeof type === "string") return type.toLowerCase();
  if (Array.isArray(type)) return (type as unknown[]).find((t): t is string => typeof t === "string" && t.toLowerCase() !== "null")?.toLowerCase();
  if (schema.properties) return "object";
  return undefined;
}

/** A number moved inside the schema's bounds (`minimum`, `maximum`, and their exclusive forms). */
function within(s: Schema, n: number, integer: boolean): number {
  const step = integer ? 1 : 0.01;
  const low = typeof s.minimum === "number" ? s.minimum : typeof s.exclusiveMinimum === "number" ? s.exclusiveMinimum + step : undefined;
  const high = typeof s.maximum === "number" ? s.maximum : typeof s.exclusiveMaximum === "number" ? s.exclusiveMaximum - step : undefined;
  let value = n;
  if (high !== undefined && value > high) value = integer ? Math.floor(high) : high;
  if (low !== undefined && value < low) value = integer ? Math.ceil(low) : low;
  return value;
}

/**
 * A deterministic JSON value that satisfies the common subset of JSON
 * Schema that structured-output schemas use (objects with required
 * properties, arrays, enums, consts, anyOf, $ref into $defs, the scalar
 * types), so that a structured-output client can parse and validate what
 * the simulator answers. Depth-limited: recursive schemas end in null.
 */
function instance(schema: Schema, root: Schema, next: () => number, depth: number): unknown {
  if (depth > 12) return null;
  const s = resolve(schema, root);
  if ("const" in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[Math.floor(next() * s.enum.length)];
  const options = (Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : undefined) as Schema[] | undefined;
  if (options && options.length > 0) return instance(options[0]!, root, next, depth + 1);
  switch (typeOf(s)) {
    case "object": {
      const out: Record<string, unknown> = {};
      const properties = (s.properties ?? {}) as Record<string, Schema>;
      for (const [key, value] of Object.entries(properties)) out[key] = instance(value, root, next, depth + 1);
      return out;
    }
    case "array": {
      const items = (s.items ?? {}) as Schema;
      const min = typeof s.minItems === "number" ? s.minItems : 1;
      return Array.from({ length: Math.max(min, 1) }, () => instance(items, root, next, depth + 1));
    }
    case "string":
      return simulatedTokens(Math.floor(next() * 1000), 2)
        .join("")
        .trim();
    case "integer":
      return within(s, Math.floor(next() * 100), true);
    case "number":
      return within(s, Math.round(next() * 10_000) / 100, false);
    case "boolean":
      return next() < 0.5;
    case "null":
      return null;
    default:
      return {};
  }
}

/** The answer text for a JSON response: an instance of `schema`, or any object when there is none (JSON mode). */
export function jsonAnswer(schema: Schema | undefined, seed: number): string {
  const next = createRandom(seed ^ 0x150);
  if (!schema) return JSON.stringify({ answer: simulatedTokens(seed, 3).join("").trim() });
  return JSON.stringify(instance(schema, schema, next, 0));
}

/** A deterministic instance of a JSON schema: tool-call arguments valid for a declared tool's parameters. */
export function schemaInstance(schema: Schema, seed: number): unknown {
  return instance(schema, schema, createRandom(seed ^ 0x7001), 0);
}

/** Splits an answer into token-sized pieces (about four characters), as a model streams it. */
export function answerTokens(text: string): string[] {
  const out: string[] = [];
  for (let at = 0; at < text.length; at += 4) out.push(text.slice(at, at + 4));
  return out;
}
