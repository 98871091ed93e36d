import type { DescField, DescMessage } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { GatewayError } from "../core/errors.js";
import { pathSegment, type StructureLimits, STRUCTURAL_DEPTH, tooDeep, tooManyElements } from "../core/structure-limits.js";

/** Messages whose nesting is JSON nesting: the only recursive types a request can carry. */
const JSON_CONTAINERS = new Set(["google.protobuf.Struct", "google.protobuf.ListValue"]);

interface Budget {
  readonly limits: StructureLimits;
  elements: number;
}

function messageOf(field: DescField): DescMessage | undefined {
  switch (field.fieldKind) {
    case "message":
      return field.message;
    case "list":
      return field.listKind === "message" ? field.message : undefined;
    case "map":
      return field.mapKind === "message" ? field.message : undefined;
    default:
      return undefined;
  }
}

/** The value of one map entry (field 2), with its key for the path. */
function mapEntry(bytes: Uint8Array): { key: string; value: Uint8Array | undefined } {
  const reader = new BinaryReader(bytes);
  let key = "";
  let value: Uint8Array | undefined;
  while (reader.pos < reader.len) {
    const [no, type] = reader.tag();
    if (no === 1 && type === WireType.LengthDelimited) key = reader.string();
    else if (no === 2 && type === WireType.LengthDelimited) value = reader.bytes();
    else reader.skip(type);
  }
  return { key, value };
}

function walk(schema: DescMessage, bytes: Uint8Array, budget: Budget, depth: number, path: string): void {
  const jsonDepth = depth + (JSON_CONTAINERS.has(schema.typeName) ? 1 : 0);
  if (jsonDepth > budget.limits.maxJsonDepth + STRUCTURAL_DEPTH) throw tooDeep(path, budget.limits.maxJsonDepth);
  const reader = new BinaryReader(bytes);
  let indexes: Map<number, number> | undefined;
  while (reader.pos < reader.len) {
    if (++budget.elements > budget.limits.maxRequestElements) throw tooManyElements(budget.limits.maxRequestElements);
    const [no, type] = reader.tag();
    const field = schema.fields.find((f) => f.number === no);
    const nested = field && type === WireType.LengthDelimited ? messageOf(field) : undefined;
    if (!field || !nested) {
      reader.skip(type, no);
      continue;
    }
    const sub = reader.bytes();
    let at = pathSegment(path, field.name);
    if (field.fieldKind === "list") {
      indexes ??= new Map();
      const index = indexes.get(no) ?? 0;
      indexes.set(no, index + 1);
      at = pathSegment(at, index);
    }
    if (field.fieldKind === "map") {
      const entry = mapEntry(sub);
      if (entry.value) walk(nested, entry.value, budget, jsonDepth, pathSegment(at, entry.key));
    } else {
      walk(nested, sub, budget, jsonDepth, at);
    }
  }
}

/**
 * Walks a binary protobuf message with its schema, counting every field
 * occurrence and measuring JSON nesting (Struct and ListValue), without
 * building any message. Throws the same errors as the JSON scan. Cheap:
 * it stops at the first limit, so a hostile message costs at most
 * `maxRequestElements` tag reads. Malformed bytes are left to the real decoder.
 */
export function scanProto(schema: DescMessage, bytes: Uint8Array, limits: StructureLimits): void {
  try {
    walk(schema, bytes, { limits, elements: 0 }, 0, "");
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    // Not our limit: broken wire format, which the decoder reports properly.
  }
}
