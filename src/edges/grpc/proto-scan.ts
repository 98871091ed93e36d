import type { DescField, DescMessage } from "@bufbuild/protobuf";
import { GatewayError } from "../../core/errors.js";
import { pathSegment, STRUCTURAL_DEPTH, type StructureLimits, tooDeep, tooManyElements } from "../../core/structure-limits.js";

/** Messages whose nesting is JSON nesting: the only recursive types a request can carry. */
const JSON_CONTAINERS = new Set(["google.protobuf.Struct", "google.protobuf.ListValue"]);
/** JSON value types: paths through them read as JSON paths (`parameters.properties.a`), not as their field names. */
const JSON_TYPES = new Set(["google.protobuf.Struct", "google.protobuf.ListValue", "google.protobuf.Value"]);

/** What the scan needs to know of one field: where to descend, and how to name it. */
interface FieldPlan {
  readonly field: DescField;
  readonly nested: DescMessage | undefined;
}

interface MessagePlan {
  readonly fields: Map<number, FieldPlan>;
  readonly json: boolean;
  readonly jsonContainer: boolean;
}

const plans = new WeakMap<DescMessage, MessagePlan>();

function planOf(schema: DescMessage): MessagePlan {
  let plan = plans.get(schema);
  if (plan) return plan;
  const fields = new Map<number, FieldPlan>();
  for (const field of schema.fields) {
    const nested = field.fieldKind === "message" ? field.message : (field.fieldKind === "list" && field.listKind === "message") || (field.fieldKind === "map" && field.mapKind === "message") ? field.message : undefined;
    fields.set(field.number, { field, nested });
  }
  plan = { fields, json: JSON_TYPES.has(schema.typeName), jsonContainer: JSON_CONTAINERS.has(schema.typeName) };
  plans.set(schema, plan);
  return plan;
}

/** Thrown for bytes that are not protobuf: the real decoder will say so properly. */
const MALFORMED = new Error("malformed");

/**
 * A cursor over one buffer: no allocation per field, nested messages walked
 * by end offset instead of new readers.
 */
class Cursor {
  pos = 0;
  constructor(readonly bytes: Uint8Array) {}

  varint(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (this.pos >= this.bytes.length) throw MALFORMED;
      const b = this.bytes[this.pos++]!;
      if (shift < 28) result |= (b & 0x7f) << shift;
      else if (shift < 53) result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result;
      shift += 7;
      if (shift > 63) throw MALFORMED;
    }
  }

  skip(wireType: number, end: number): void {
    switch (wireType) {
      case 0:
        this.varint();
        break;
      case 1:
        this.pos += 8;
        break;
      case 2: {
        const length = this.varint();
        this.pos += length;
        break;
      }
      case 5:
        this.pos += 4;
        break;
      default:
        throw MALFORMED; // groups (3, 4) and invalid types: not in our contract
    }
    if (this.pos > end) throw MALFORMED;
  }
}

interface Walk {
  readonly cursor: Cursor;
  readonly limits: StructureLimits;
  readonly maxDepth: number;
  elements: number;
  /** The path to the current message, as segments; joined only for an error message. */
  readonly path: Array<string | number | KeyRef>;
  /** Per nesting level, occurrences of each list field so far (reused, not reallocated per message). */
  readonly counters: number[][];
}

function pathString(w: Walk): string {
  const bytes = w.cursor.bytes;
  return w.path.reduce<string>((path, segment) => pathSegment(path, typeof segment === "object" ? Buffer.from(bytes.buffer, bytes.byteOffset + segment.start, segment.end - segment.start).toString("utf8") : segment), "");
}

/** Where a map entry's key lies in the buffer: decoded only if an error names the path. */
interface KeyRef {
  readonly start: number;
  readonly end: number;
}

/** The key of a map entry spanning [pos, end), leaving the cursor at the entry's start. */
function mapKey(w: Walk, end: number): KeyRef {
  const { cursor } = w;
  const start = cursor.pos;
  let key: KeyRef = { start: 0, end: 0 };
  while (cursor.pos < end) {
    const tag = cursor.varint();
    if (tag >>> 3 === 1 && (tag & 7) === 2) {
      const length = cursor.varint();
      key = { start: cursor.pos, end: cursor.pos + length };
      cursor.pos += length;
      if (cursor.pos > end) throw MALFORMED;
    } else cursor.skip(tag & 7, end);
  }
  cursor.pos = start;
  return key;
}

function walk(w: Walk, schema: DescMessage, end: number, depth: number, level: number): void {
  const plan = planOf(schema);
  const jsonDepth = depth + (plan.jsonContainer ? 1 : 0);
  if (jsonDepth > w.maxDepth) throw tooDeep(pathString(w), w.limits.maxJsonDepth);
  const { cursor, path } = w;
  const counts = (w.counters[level] ??= []);
  counts.length = 0;
  while (cursor.pos < end) {
    if (++w.elements > w.limits.maxRequestElements) throw tooManyElements(w.limits.maxRequestElements);
    const tag = cursor.varint();
    const no = tag >>> 3;
    const wireType = tag & 7;
    const found = plan.fields.get(no);
    if (!found?.nested || wireType !== 2) {
      cursor.skip(wireType, end);
      continue;
    }
    const length = cursor.varint();
    const subEnd = cursor.pos + length;
    if (subEnd > end) throw MALFORMED;
    const { field, nested } = found;
    const mark = path.length;
    if (!plan.json) path.push(field.name);
    if (field.fieldKind === "list") {
      const index = counts[no] ?? 0;
      counts[no] = index + 1;
      path.push(index);
    }
    if (field.fieldKind === "map") {
      path.push(mapKey(w, subEnd));
      // The entry's value (field 2) is the nested message; its key is a scalar.
      while (cursor.pos < subEnd) {
        if (++w.elements > w.limits.maxRequestElements) throw tooManyElements(w.limits.maxRequestElements);
        const entryTag = cursor.varint();
        if (entryTag >>> 3 === 2 && (entryTag & 7) === 2) {
          const valueLength = cursor.varint();
          const valueEnd = cursor.pos + valueLength;
          if (valueEnd > subEnd) throw MALFORMED;
          walk(w, nested, valueEnd, jsonDepth, level + 1);
          cursor.pos = valueEnd;
        } else cursor.skip(entryTag & 7, subEnd);
      }
    } else {
      walk(w, nested, subEnd, jsonDepth, level + 1);
    }
    path.length = mark;
    cursor.pos = subEnd;
  }
}

/**
 * Walks a binary protobuf message with its schema, counting every field
 * occurrence and measuring JSON nesting (Struct and ListValue), without
 * building any message. Throws the same errors as the JSON scan. Cheap: one
 * cursor, no allocation per field, and it stops at the first limit, so a
 * hostile message costs at most `maxRequestElements` tag reads. Malformed
 * bytes are left to the real decoder.
 */
export function scanProto(schema: DescMessage, bytes: Uint8Array, limits: StructureLimits): void {
  const w: Walk = { cursor: new Cursor(bytes), limits, maxDepth: limits.maxJsonDepth + STRUCTURAL_DEPTH, elements: 0, path: [], counters: [] };
  try {
    walk(w, schema, bytes.length, 0, 0);
  } catch (error) {
    if (error instanceof GatewayError) throw error;
  }
}
