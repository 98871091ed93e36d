import { randomUUID } from "node:crypto";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../gen/sluice/admin/v1/admin_service_pb.js";
import { ChatService } from "../gen/sluice/v1/chat_service_pb.js";
import { EmbeddingService } from "../gen/sluice/v1/embedding_service_pb.js";
import { describedOperations, openApiDocument, tableSpelling } from "../src/openapi/openapi-document.js";
import { type Harness, startHarness } from "./helpers/harness.js";
import { type McpTestServer, startMcpTestServer } from "./helpers/mcp-test-server.js";
import { OPENAPI_31_SHAPE } from "./helpers/openapi-shape.js";

/**
 * GET /openapi.json against the routes of a gateway with every optional
 * route on (the admin key, MCP, the debug endpoint, metrics, the console,
 * stored responses and conversations, batches). The document is built
 * from the route table itself, so a route of the table is always listed;
 * one that no description matches is flagged, and this test fails on the
 * flag. Each documented path and method is then requested over HTTP and
 * must reach a route (its access line names one), and each description
 * must match a route of this gateway (none is stale).
 */
const ADMIN_KEY = "sk-test-admin-openapi-3d5f7b9c1e2a4680";
const KEY = "sk-test-openapi-key-8e0a2c4d6f1b3957";
type Doc = { paths: Record<string, Record<string, Record<string, unknown>>>; components: { schemas: Record<string, unknown>; responses: Record<string, unknown> } };
let h: Harness;
let upstream: McpTestServer;
let doc: Doc;

beforeAll(async () => {
  upstream = await startMcpTestServer();
  h = await startHarness({
    models: { demo: "sim-1?tokens=3" },
    env: { SLUICE_ADMIN_KEY: ADMIN_KEY, KEY },
    auth: { adminKeyEnv: "SLUICE_ADMIN_KEY", keys: [{ name: "caller", keyEnv: "KEY", mcp: { servers: ["test"] } }] },
    server: { debugEndpoints: true },
    mcp: { servers: { test: { http: { url: upstream.url } } } },
  });
  const res = await fetch(`${h.url}/openapi.json`);
  expect(res.status).toBe(200);
  doc = (await res.json()) as Doc;
}, 120_000);
afterAll(async () => {
  await h?.close();
  await upstream?.close();
});

const METHODS = ["get", "head", "post", "delete"] as const;
function operations(): { path: string; method: string; op: Record<string, unknown> }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((method) => ({ path, method, op: item[method]! })));
}

function ajv(): Ajv2020 {
  const a = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(a);
  // protobuf JSON's 64-bit integers: decimal strings.
  a.addFormat("int64", /^-?[0-9]+$/);
  a.addFormat("uint64", /^[0-9]+$/);
  return a;
}

/** Requests one documented operation with no key and placeholder ids; resolves with the access line the gateway wrote for it. */
async function probe(path: string, method: string, op: Record<string, unknown>): Promise<Record<string, unknown>> {
  const requestId = `probe-${randomUUID()}`;
  const url = h.url + path.replace("{model}", "demo").replace(/\{[^}]+\}/g, "x");
  const content = Object.keys(((op.requestBody as { content?: object } | undefined)?.content ?? {}) as object)[0];
  const json = Buffer.from("{}");
  // A Connect stream's request is one enveloped message: a flags byte and a big-endian length before the JSON.
  const body = content === undefined ? undefined : content === "application/connect+json" ? Buffer.concat([Buffer.from([0, 0, 0, 0, json.length]), json]) : json;
  const controller = new AbortController();
  const res = await fetch(url, {
    method: method.toUpperCase(),
    headers: { "x-request-id": requestId, ...(body ? { "content-type": content === "multipart/form-data" ? "application/json" : content! } : {}) },
    ...(body ? { body } : {}),
    signal: controller.signal,
  });
  // Streams (Health/Watch) would go on: the status is all a probe needs.
  controller.abort();
  void res.body?.cancel().catch(() => {});
  return h.waitForLog((line) => line.event === "access" && line.requestId === requestId, 30_000);
}

describe("GET /openapi.json", () => {
  it("is served without a key, cacheable, with an ETag that revalidates", async () => {
    const res = await fetch(`${h.url}/openapi.json`, { headers: { "accept-encoding": "gzip" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.headers.get("cache-control")).toMatch(/max-age=\d+/);
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^".+"$/);
    const text = await res.text();
    expect(text).not.toContain(ADMIN_KEY);
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(upstream.url);
    const again = await fetch(`${h.url}/openapi.json`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
  });

  it("is an OpenAPI 3.1 document whose every reference resolves and every schema is valid JSON Schema", () => {
    const shape = ajv().compile(OPENAPI_31_SHAPE);
    expect(shape(doc), JSON.stringify(shape.errors?.slice(0, 5))).toBe(true);
    // The shape does refuse: another version, an operation without responses.
    expect(shape({ ...doc, openapi: "3.0.3" })).toBe(false);
    expect(shape({ ...doc, paths: { "/x": { get: { summary: "no responses" } } } })).toBe(false);
    const ids = operations().map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { path, op } of operations()) {
      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      const declared = ((op.parameters ?? []) as { name: string; in: string }[]).filter((p) => p.in === "path").map((p) => p.name);
      expect(declared.sort(), path).toEqual(templated);
    }
    const text = JSON.stringify(doc);
    for (const [, kind, name] of text.matchAll(/"\$ref":"#\/components\/(schemas|responses)\/([^"]+)"/g)) {
      expect((doc.components as Record<string, Record<string, unknown>>)[kind!]![name!], `${kind}/${name}`).toBeDefined();
    }
    const validator = ajv();
    validator.addSchema(doc, "openapi.json");
    for (const name of Object.keys(doc.components.schemas)) {
      expect(validator.validateSchema(doc.components.schemas[name] as object), name).toBe(true);
      expect(() => validator.getSchema(`openapi.json#/components/schemas/${name}`), name).not.toThrow();
    }
  });

  it("documents every route of the table, and each documented path and method reaches a route", async () => {
    const flagged = operations().filter(({ op }) => op["x-sluice-undocumented"]);
    expect(flagged.map(({ path, method }) => `${method} ${path}`)).toEqual([]);
    // The port's own handlers, outside the table.
    const fixed: readonly (readonly [string, string])[] = [
      ["get", "/healthz"],
      ["head", "/healthz"],
      ["get", "/readyz"],
      ["head", "/readyz"],
      ["get", "/metrics"],
      ["get", "/console/"],
      ["get", "/debug/runtime"],
      ["get", "/openapi.json"],
    ];
    for (const [method, path] of fixed) expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    // The probe tells a route from none: a path no route serves is logged as "other".
    expect((await probe("/v1/not-served", "get", {})).route).toBe("other");
    expect((await probe("/not-served", "get", {})).route).toBe("other");
    for (const { path, method, op } of operations()) {
      const line = await probe(path, method, op);
      expect(line.route, `${method} ${path}`).not.toBe("other");
    }
  });

  it("describes no route this gateway does not serve: every description matches one here", () => {
    for (const op of describedOperations(new Map())) expect(doc.paths[op.path]?.[op.method.toLowerCase()], `${op.method} ${op.path}`).toBeDefined();
  });

  it("flags a route of the table that no description matches", () => {
    const routes = [
      { method: "GET", path: "/v1/models" },
      { method: "POST", path: "/v1/brand-new" },
    ];
    const built = openApiDocument({ routes, services: [], fixed: { metrics: false, debug: false, console: false } }) as Doc;
    expect(built.paths["/v1/brand-new"]?.post?.["x-sluice-undocumented"]).toBe(true);
    expect(built.paths["/v1/models"]?.get?.["x-sluice-undocumented"]).toBeUndefined();
    expect(tableSpelling("/v1beta/models/{model}:countTokens")).toBe("/v1beta/models/{id}");
  });

  it("describes every RPC of the proto's services, the admin service's behind the admin key", () => {
    for (const service of [AdminService, ChatService, EmbeddingService]) {
      for (const method of service.methods) expect(doc.paths[`/${service.typeName}/${method.name}`]?.post, `${service.typeName}/${method.name}`).toBeDefined();
    }
    for (const method of AdminService.methods.filter((m) => m.name !== "WatchStats")) {
      expect(doc.paths[`/${AdminService.typeName}/${method.name}`]!.post!.security).toEqual([{ adminKey: [] }]);
    }
  });

  it("maps messages as protobuf JSON, and the gateway's real answers match the schemas", async () => {
    const schemas = doc.components.schemas as Record<string, { properties: Record<string, Record<string, unknown>> }>;
    const limits = schemas["sluice.admin.v1.KeyLimits"]!.properties;
    expect(limits.tokensPerMinute).toMatchObject({ type: "string", format: "uint64" });
    expect(limits.requestsPerMinute).toMatchObject({ type: "integer" });
    expect(schemas["sluice.admin.v1.Budget"]!.properties.period).toMatchObject({ type: "string", enum: expect.arrayContaining(["PERIOD_DAY", "PERIOD_MONTH"]) });
    expect(schemas["sluice.admin.v1.KeyInfo"]!.properties.createdAt).toMatchObject({ type: "string", format: "date-time" });
    expect(schemas["sluice.admin.v1.UpdateKeyRequest"]!.properties.updateMask).toMatchObject({ type: "string" });

    const validator = ajv();
    validator.addSchema(doc, "openapi.json");
    const check = async (method: string, body: unknown, key: string | null, schema: string, status: number) => {
      const res = await fetch(`${h.url}/sluice.admin.v1.AdminService/${method}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(status);
      const answer: unknown = await res.json();
      const validate = validator.getSchema(`openapi.json#/components/schemas/${schema}`)!;
      expect(validate(answer), `${method}: ${JSON.stringify(validate.errors)}`).toBe(true);
      const request = validator.getSchema(`openapi.json#/components/schemas/sluice.admin.v1.${method}Request`)!;
      expect(request(body), `${method} request: ${JSON.stringify(request.errors)}`).toBe(true);
    };
    // The schemas refuse what protobuf JSON would not write: a name that is a number, an enum by number, two members of one oneof.
    const createKey = validator.getSchema("openapi.json#/components/schemas/sluice.admin.v1.CreateKeyRequest")!;
    expect(createKey({ name: 1 })).toBe(false);
    expect(createKey({ name: "x", budget: { period: 1 } })).toBe(false);
    const delta = validator.getSchema("openapi.json#/components/schemas/sluice.v1.StreamChatResponse")!;
    expect(delta({ sequence: "1", text: {} })).toBe(true);
    expect(delta({ sequence: "1", text: {}, usage: {} })).toBe(false);
    await check("CreateKey", { name: "schema-check", limits: { requestsPerMinute: 5, tokensPerMinute: "1000" }, budget: { usdMicros: "2000000", period: "PERIOD_DAY" } }, ADMIN_KEY, "sluice.admin.v1.CreateKeyResponse", 200);
    await check("UpdateKey", { name: "schema-check", updateMask: "limits", limits: { concurrentStreams: 2 } }, ADMIN_KEY, "sluice.admin.v1.UpdateKeyResponse", 200);
    await check("ListKeys", {}, ADMIN_KEY, "sluice.admin.v1.ListKeysResponse", 200);
    await check("ListKeys", {}, null, "sluice.connect.Error", 401);
    await check("RevokeKey", { name: "schema-check" }, ADMIN_KEY, "sluice.admin.v1.RevokeKeyResponse", 200);

    // A public unary RPC: a whole answer (oneofs, 64-bit counters, enums) against the schema its operation names.
    const chat = doc.paths["/sluice.v1.ChatService/Chat"]!.post! as { requestBody: { content: Record<string, { schema: { $ref: string } }> }; responses: Record<string, { content: Record<string, { schema: { $ref: string } }> }> };
    const body = { model: "demo", messages: [{ role: "ROLE_USER", content: [{ text: "Hello" }] }] };
    const res = await fetch(`${h.url}/sluice.v1.ChatService/Chat`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    const answer: unknown = await res.json();
    for (const [schema, value] of [
      [chat.responses["200"]!.content["application/json"]!.schema.$ref, answer],
      [chat.requestBody.content["application/json"]!.schema.$ref, body],
    ] as const) {
      const validate = validator.getSchema(`openapi.json${schema}`)!;
      expect(validate(value), `${schema}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
  });
});
