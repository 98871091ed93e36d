import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { anthropicOperations } from "./anthropic-operations.js";
import { EDGE_ERRORS, ERROR_RESPONSES } from "./edge-errors.js";
import { geminiOperations } from "./gemini-operations.js";
import type { HttpOperation } from "./http-operation.js";
import type { Components } from "./json-schema.js";
import { openAiOperations } from "./openai-operations.js";
import { adminExportOperations, fixedOperations, mcpOperations, OPENAPI_OPERATION, type OperatorRoutes } from "./operator-operations.js";
import { responsesOperations } from "./responses-operations.js";
import { CONNECT_ERROR, rpcPaths } from "./rpc-operations.js";
import { SECURITY_SCHEMES, type Security } from "./security.js";

/** A route of the table as routes.ts holds it: a method and a path whose variable segments are `{id}`. */
export interface TableRoute {
  readonly method: string;
  readonly path: string;
}

export interface DocumentInput {
  /** Every HTTP route of the table, in order. */
  readonly routes: readonly TableRoute[];
  /** The Connect services registered, each with who may call a method. */
  readonly services: readonly { readonly service: DescService; readonly security: (method: DescMethod) => Security }[];
  /** The routes served outside the table (health, metrics, the console, the debug endpoint). */
  readonly fixed: OperatorRoutes;
}

/** A documented path in the table's spelling: every segment with a `{…}` in it is one `{id}`. */
export function tableSpelling(path: string): string {
  return path
    .split("/")
    .map((segment) => (segment.includes("{") ? "{id}" : segment))
    .join("/");
}

/**
 * Every HTTP route any configuration can serve, described. Which of them
 * a gateway documents is decided by its route table, not by this list.
 */
export function describedOperations(components: Components): HttpOperation[] {
  return [...openAiOperations(), ...responsesOperations(components), ...anthropicOperations(components), ...geminiOperations(components), ...mcpOperations(), ...adminExportOperations(), OPENAPI_OPERATION];
}

function pathParameters(path: string): Record<string, unknown>[] {
  return [...path.matchAll(/\{([^}]+)\}/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
}

function toOperation(op: HttpOperation): Record<string, unknown> {
  const parameters = [...pathParameters(op.path), ...(op.parameters ?? []).map((p) => ({ name: p.name, in: p.in, description: p.description, schema: p.schema ?? { type: "string" } }))];
  return {
    operationId: `${op.method} ${op.path}`,
    tags: [op.tag],
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    security: op.security,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body
      ? {
          requestBody: {
            required: op.body.required ?? true,
            ...(op.body.loose ? { description: `Described loosely: ${op.body.loose}` } : {}),
            content: { [op.body.contentType ?? "application/json"]: { schema: op.body.schema } },
          },
          ...(op.body.loose ? { "x-sluice-loose": op.body.loose } : {}),
        }
      : {}),
    responses: {
      [op.answer.status ?? "200"]: { description: op.answer.description, ...(op.answer.contentTypes.length > 0 ? { content: Object.fromEntries(op.answer.contentTypes.map((t) => [t, {}])) } : {}) },
      default: { $ref: `#/components/responses/${ERROR_RESPONSES[op.error]}` },
    },
  };
}

/** A route of the table no description matches: listed, and flagged so that CI (test/openapi.test.ts) fails on it. */
function undocumented(route: TableRoute): Record<string, unknown> {
  return {
    operationId: `${route.method} ${route.path}`,
    summary: "Not described yet",
    "x-sluice-undocumented": true,
    responses: { default: { description: "Not described." } },
  };
}

/**
 * The OpenAPI 3.1 description of what this gateway serves: its route
 * table's HTTP routes (each described in this folder's tables, or flagged
 * as undocumented), the routes outside the table, and the Connect
 * services from their descriptors. Built from the routes served, so it
 * never lists a route that is off, nor misses one that is on.
 */
export function openApiDocument(input: DocumentInput): Record<string, unknown> {
  const components: Components = new Map([["sluice.connect.Error", CONNECT_ERROR]]);
  const described = describedOperations(components);
  const paths: Record<string, Record<string, unknown>> = {};
  const add = (path: string, method: string, operation: Record<string, unknown>) => {
    paths[path] = { ...paths[path], [method.toLowerCase()]: operation };
  };
  for (const route of input.routes) {
    const matches = described.filter((op) => op.method === route.method && tableSpelling(op.path) === route.path);
    if (matches.length === 0) add(route.path, route.method, undocumented(route));
    for (const op of matches) add(op.path, op.method, toOperation(op));
  }
  for (const op of fixedOperations(input.fixed)) add(op.path, op.method, toOperation(op));
  Object.assign(paths, rpcPaths(input.services, components));
  return {
    openapi: "3.1.1",
    info: {
      title: "Sluice",
      version: "v1",
      summary: "An LLM streaming gateway: its HTTP edges, its Connect services and the admin API, on one port.",
      description: "Generated by the gateway from its route table and its protobuf descriptors (docs/http-api.md). Connect RPCs are POSTs of protobuf JSON; gRPC and gRPC-Web serve them too.",
      license: { name: "MIT", identifier: "MIT" },
    },
    jsonSchemaDialect: "https://spec.openapis.org/oas/3.1/dialect/base",
    tags: [...new Set([...described.map((op) => op.tag), ...input.services.map((s) => s.service.typeName)])].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: SECURITY_SCHEMES,
      responses: EDGE_ERRORS,
      schemas: Object.fromEntries([...components].sort(([a], [b]) => a.localeCompare(b))),
    },
  };
}
