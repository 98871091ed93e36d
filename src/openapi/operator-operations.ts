import { type HttpOperation, JSON_TYPE, obj, str } from "./http-operation.js";
import { ADMIN, KEY, OPEN } from "./security.js";

const TAG = "Operations";

/** What the port serves outside its route table, each only where routes.ts serves it. */
export interface OperatorRoutes {
  readonly metrics: boolean;
  readonly debug: boolean;
  readonly console: boolean;
}

function health(path: "/healthz" | "/readyz"): HttpOperation[] {
  const summary = path === "/healthz" ? "Liveness: 200 while the process answers" : "Readiness: 503 while draining or while a dependency every request needs is missing";
  return (["GET", "HEAD"] as const).map((method) => ({
    method,
    path,
    tag: TAG,
    summary,
    security: OPEN,
    answer: { description: path === "/healthz" ? '`{"status": "ok"}`.' : '`{"status": "ready" | "draining" | "waiting", "waitingFor"?, "details"?}` (503 unless ready).', contentTypes: method === "GET" ? [JSON_TYPE] : [] },
    error: "plain" as const,
  }));
}

/** This document (a route of the table). */
export const OPENAPI_OPERATION: HttpOperation = {
  method: "GET",
  path: "/openapi.json",
  tag: TAG,
  summary: "This document (no secrets; cacheable, with an ETag)",
  security: OPEN,
  answer: { description: "OpenAPI 3.1.", contentTypes: [JSON_TYPE] },
  error: "plain",
};

/** Health, metrics, the console and the debug endpoint: served before or after the table, by the port's own handlers. */
export function fixedOperations(on: OperatorRoutes): HttpOperation[] {
  return [
    ...health("/healthz"),
    ...health("/readyz"),
    ...(on.metrics
      ? [
          {
            method: "GET" as const,
            path: "/metrics",
            tag: TAG,
            summary: "Prometheus metrics (here unless telemetry.metrics.port gives them a listener of their own)",
            security: OPEN,
            answer: { description: "Prometheus text exposition.", contentTypes: ["text/plain"] },
            error: "plain" as const,
          },
        ]
      : []),
    ...(on.console
      ? [
          {
            method: "GET" as const,
            path: "/console/",
            tag: TAG,
            summary: "The console (its page asks for the admin key unless console.access is open); HEAD too",
            security: OPEN,
            answer: { description: "The page.", contentTypes: ["text/html"] },
            error: "plain" as const,
          },
          {
            method: "GET" as const,
            path: "/console/{asset}",
            tag: TAG,
            summary: "The console's static files; HEAD too",
            security: OPEN,
            answer: { description: "A script, style sheet or image.", contentTypes: ["application/javascript", "text/css"] },
            error: "plain" as const,
          },
        ]
      : []),
    ...(on.debug
      ? [
          {
            method: "GET" as const,
            path: "/debug/runtime",
            tag: TAG,
            summary: "Memory, event-loop delay, streams and connections (server.debugEndpoints)",
            security: OPEN,
            answer: { description: "A JSON object of figures.", contentTypes: [JSON_TYPE] },
            error: "plain" as const,
          },
        ]
      : []),
  ];
}

/** The admin API's CSV exports (routes of the table, behind the admin key). */
export function adminExportOperations(): HttpOperation[] {
  return [
    {
      method: "GET",
      path: "/admin/v1/spend.csv",
      tag: TAG,
      summary: "GetSpendReport as CSV",
      security: ADMIN,
      parameters: [
        { name: "start", in: "query", description: "RFC 3339, required.", schema: { type: "string", format: "date-time" } },
        { name: "end", in: "query", description: "RFC 3339, required.", schema: { type: "string", format: "date-time" } },
        { name: "group_by", in: "query", description: "Comma-separated dimensions (business_line, team, key, alias, target, tag, day, hour…)." },
        { name: "group_by_tag", in: "query", description: "The tag key grouped by with group_by=tag." },
        { name: "tag", in: "query", description: "key:value; repeatable." },
      ],
      answer: { description: "CSV, one row per group.", contentTypes: ["text/csv"] },
      error: "openai",
    },
    {
      method: "GET",
      path: "/admin/v1/evaluations/{evaluation_id}/report.csv",
      tag: TAG,
      summary: "GetEvaluationReport as CSV",
      security: ADMIN,
      answer: { description: "CSV, one row per candidate.", contentTypes: ["text/csv"] },
      error: "openai",
    },
  ];
}

/** MCP streamable HTTP (docs/mcp.md): JSON-RPC over POST; GET is 405 (no server-initiated stream); DELETE ends a session. */
export function mcpOperations(): HttpOperation[] {
  const session = { name: "mcp-session-id", in: "header" as const, description: "The session the initialize answer named." };
  return [
    {
      method: "POST",
      path: "/mcp",
      tag: "MCP",
      summary: "One JSON-RPC message (initialize, tools/list, tools/call, prompts/*, resources/*)",
      security: KEY,
      parameters: [session],
      body: { schema: obj({ jsonrpc: { const: "2.0" }, id: { type: ["string", "integer"] }, method: str(), params: { type: "object" } }, ["jsonrpc", "method"]), loose: "the JSON-RPC envelope only; params are the MCP specification's." },
      answer: { description: "The JSON-RPC answer, as JSON or as one SSE event.", contentTypes: [JSON_TYPE, "text/event-stream"] },
      error: "jsonrpc",
    },
    { method: "GET", path: "/mcp", tag: "MCP", summary: "Answered 405: this endpoint opens no server-initiated stream", security: KEY, answer: { status: "405", description: "Method not allowed.", contentTypes: [] }, error: "jsonrpc" },
    { method: "DELETE", path: "/mcp", tag: "MCP", summary: "End a session", security: KEY, parameters: [session], answer: { description: "The session is gone.", contentTypes: [] }, error: "jsonrpc" },
  ];
}
