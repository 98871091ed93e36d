import { type DescEnum, type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { type Components, type JsonSchema, schemaRef } from "./json-schema.js";

/** 64-bit integers are strings in protobuf JSON (a JSON number loses precision past 2^53); parsers take numbers too. */
const INT64: JsonSchema = { type: "string", pattern: "^-?[0-9]+$", format: "int64" };
const UINT64: JsonSchema = { type: "string", pattern: "^[0-9]+$", format: "uint64" };

function scalarSchema(scalar: ScalarType): JsonSchema {
  switch (scalar) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      // "NaN", "Infinity" and "-Infinity" are the JSON forms of the values a number cannot carry.
      return { oneOf: [{ type: "number" }, { enum: ["NaN", "Infinity", "-Infinity"] }] };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return INT64;
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return UINT64;
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", minimum: 0, maximum: 4_294_967_295 };
    default:
      return { type: "integer", minimum: -2_147_483_648, maximum: 2_147_483_647 };
  }
}

function enumSchema(desc: DescEnum): JsonSchema {
  // google.protobuf.NullValue is JSON's null.
  if (desc.typeName === "google.protobuf.NullValue") return { type: "null" };
  return { type: "string", enum: desc.values.map((value) => value.name) };
}

/** The well-known types whose JSON is not an object of their fields (the protobuf JSON mapping's special cases). */
const WELL_KNOWN: Readonly<Record<string, JsonSchema>> = {
  "google.protobuf.Timestamp": { type: "string", format: "date-time", description: "RFC 3339, UTC (`Z`)." },
  "google.protobuf.Duration": { type: "string", pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$", description: "Seconds with an `s` suffix: `1.5s`." },
  "google.protobuf.FieldMask": { type: "string", description: "Comma-separated field paths in lowerCamelCase: `limits,budget`." },
  "google.protobuf.Struct": { type: "object", additionalProperties: true },
  "google.protobuf.Value": { description: "Any JSON value." },
  "google.protobuf.ListValue": { type: "array", items: {} },
  "google.protobuf.Empty": { type: "object", additionalProperties: false },
  "google.protobuf.Any": { type: "object", required: ["@type"], properties: { "@type": { type: "string" } }, additionalProperties: true },
  "google.protobuf.DoubleValue": { type: ["number", "string", "null"] },
  "google.protobuf.FloatValue": { type: ["number", "string", "null"] },
  "google.protobuf.Int64Value": { type: ["string", "null"], pattern: "^-?[0-9]+$" },
  "google.protobuf.UInt64Value": { type: ["string", "null"], pattern: "^[0-9]+$" },
  "google.protobuf.Int32Value": { type: ["integer", "null"] },
  "google.protobuf.UInt32Value": { type: ["integer", "null"], minimum: 0 },
  "google.protobuf.BoolValue": { type: ["boolean", "null"] },
  "google.protobuf.StringValue": { type: ["string", "null"] },
  "google.protobuf.BytesValue": { type: ["string", "null"], contentEncoding: "base64" },
};

/**
 * A message's schema under the protobuf JSON mapping, as Connect's JSON
 * codec reads and writes it: lowerCamelCase names, 64-bit integers as
 * strings, enums by value name, oneof members mutually exclusive, maps as
 * objects, the well-known types in their own JSON forms. Every message is
 * a named component referred to by `$ref`, so recursive messages are
 * finite. Returns the reference and fills `components`.
 */
export function messageSchema(desc: DescMessage, components: Components): JsonSchema {
  const known = WELL_KNOWN[desc.typeName];
  if (known) return known;
  if (!components.has(desc.typeName)) {
    // Claimed before the fields are walked: a field of this very type then finds it and stops.
    components.set(desc.typeName, {});
    components.set(desc.typeName, objectSchema(desc, components));
  }
  return schemaRef(desc.typeName);
}

function objectSchema(desc: DescMessage, components: Components): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const field of desc.fields) properties[field.jsonName] = fieldSchema(field, components);
  // Exactly one of "member i is set" or "none is set": two members set match two branches and fail.
  const exclusive = desc.oneofs.map((oneof) => {
    const members = oneof.fields.map((field) => ({ required: [field.jsonName] }));
    return { oneOf: [...members, { not: { anyOf: members } }] };
  });
  return {
    type: "object",
    properties,
    ...(exclusive.length === 1 ? exclusive[0] : exclusive.length > 1 ? { allOf: exclusive } : {}),
    ...(desc.oneofs.length > 0 ? { "x-protobuf-oneofs": Object.fromEntries(desc.oneofs.map((o) => [o.name, o.fields.map((f) => f.jsonName)])) } : {}),
  };
}

function fieldSchema(field: DescField, components: Components): JsonSchema {
  switch (field.fieldKind) {
    case "scalar":
      return scalarSchema(field.scalar);
    case "enum":
      return enumSchema(field.enum);
    case "message":
      return messageSchema(field.message, components);
    case "list":
      return { type: "array", items: field.listKind === "scalar" ? scalarSchema(field.scalar) : field.listKind === "enum" ? enumSchema(field.enum) : messageSchema(field.message, components) };
    case "map":
      return {
        type: "object",
        additionalProperties: field.mapKind === "scalar" ? scalarSchema(field.scalar) : field.mapKind === "enum" ? enumSchema(field.enum) : messageSchema(field.message, components),
      };
  }
}
