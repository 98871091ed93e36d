/**
 * The shape of an OpenAPI 3.1 document, as a JSON Schema (draft 2020-12)
 * for ajv: the structure test/openapi.test.ts checks /openapi.json
 * against. Written here, not the OpenAPI Initiative's schema: no
 * maintained OpenAPI validator is among the project's dependencies. It
 * covers what the document uses (paths, operations, parameters, bodies,
 * responses, security, components); the test checks the rest by code
 * (unique operation ids, path templates against their parameters, every
 * `$ref` resolved, every component a valid JSON Schema).
 */
const ref = { type: "object", required: ["$ref"], properties: { $ref: { type: "string", pattern: "^#/components/" } } };
const media = { type: "object", additionalProperties: { type: "object", properties: { schema: { type: ["object", "boolean"] }, example: true } } };
const security = { type: "array", items: { type: "object", additionalProperties: { type: "array", items: { type: "string" } } } };
const parameter = {
  type: "object",
  required: ["name", "in"],
  properties: {
    name: { type: "string", minLength: 1 },
    in: { enum: ["query", "header", "path", "cookie"] },
    required: { type: "boolean" },
    description: { type: "string" },
    schema: { type: ["object", "boolean"] },
  },
  allOf: [
    // A path parameter is required.
    { anyOf: [{ properties: { in: { not: { const: "path" } } } }, { required: ["required"], properties: { required: { const: true } } }] },
    { oneOf: [{ required: ["schema"] }, { required: ["content"] }] },
  ],
};
const response = { oneOf: [ref, { type: "object", required: ["description"], properties: { description: { type: "string" }, content: media } }] };
const operation = {
  type: "object",
  required: ["responses"],
  properties: {
    operationId: { type: "string" },
    tags: { type: "array", items: { type: "string" } },
    summary: { type: "string" },
    description: { type: "string" },
    deprecated: { type: "boolean" },
    security,
    parameters: { type: "array", items: parameter },
    requestBody: { type: "object", required: ["content"], properties: { required: { type: "boolean" }, description: { type: "string" }, content: media } },
    responses: { type: "object", minProperties: 1, propertyNames: { pattern: "^([1-5][0-9X]{2}|default)$" }, additionalProperties: response },
  },
  patternProperties: { "^x-": true },
  additionalProperties: false,
};
const securityScheme = {
  type: "object",
  required: ["type"],
  properties: { description: { type: "string" } },
  oneOf: [
    { required: ["name", "in"], properties: { type: { const: "apiKey" }, in: { enum: ["query", "header", "cookie"] } } },
    { required: ["scheme"], properties: { type: { const: "http" }, scheme: { type: "string" } } },
    { properties: { type: { enum: ["mutualTLS", "oauth2", "openIdConnect"] } } },
  ],
};

export const OPENAPI_31_SHAPE = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  required: ["openapi", "info", "paths"],
  properties: {
    openapi: { type: "string", pattern: "^3\\.1\\.\\d+$" },
    info: { type: "object", required: ["title", "version"], properties: { title: { type: "string" }, version: { type: "string" }, license: { type: "object", required: ["name"] } } },
    jsonSchemaDialect: { type: "string", format: "uri" },
    tags: { type: "array", items: { type: "object", required: ["name"] } },
    paths: {
      type: "object",
      propertyNames: { pattern: "^/" },
      additionalProperties: {
        type: "object",
        propertyNames: { enum: ["get", "put", "post", "delete", "options", "head", "patch", "trace", "summary", "description", "parameters", "servers"] },
        additionalProperties: operation,
      },
    },
    components: {
      type: "object",
      properties: {
        schemas: { type: "object", propertyNames: { pattern: "^[a-zA-Z0-9._-]+$" }, additionalProperties: { type: ["object", "boolean"] } },
        responses: { type: "object", additionalProperties: response },
        securitySchemes: { type: "object", additionalProperties: securityScheme },
      },
    },
  },
};
